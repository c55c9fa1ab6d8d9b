package route_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
)

// decisionJSON encodes what Route returned, error included, so that runs compare byte for byte.
func decisionJSON(t testing.TB, r troupe.Router, in troupe.RouteInput, c troupe.Context) []byte {
	t.Helper()
	d, err := r.Route(context.Background(), in, c)
	out := struct {
		Decision troupe.RoutingDecision `json:"decision"`
		Error    string                 `json:"error,omitempty"`
	}{Decision: d}
	if err != nil {
		out.Error = err.Error()
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		t.Fatalf("json.Marshal(decision): %v", jerr)
	}
	return b
}

// TestDeterministicRouting is seed 001's compliance test 3: the same inputs give the same
// decision — here the same JSON bytes, metadata included — every time.
func TestDeterministicRouting(t *testing.T) {
	coordinator := tutor.Coordinator()
	seed001 := &route.Rules{
		Triggers:  []route.Trigger{{Name: "web_search", Patterns: []string{"search web"}, Target: "web_search"}},
		Fallbacks: map[string]string{"web_search": "rag_query"},
		Default:   "llm_generate",
	}
	// A table with many keys, so map order would show if anything ranged over a map.
	wide := &route.Rules{
		Triggers: []route.Trigger{{
			Name:   "wide",
			When:   map[string]any{"a": 1, "b": true, "c": "x", "d": nil, "e": []any{1, "2"}, "f": map[string]any{"z": 1, "y": 2}},
			Target: "w",
		}},
		Intents: map[string][]string{"i1": {"x", "y"}, "i2": {"y"}, "i3": {"z"}},
		KPIMap:  map[string][]string{"k1": {"x"}, "k2": {"y", "z"}, "k3": {"z"}},
		Default: "z",
	}
	wideState := map[string]any{"a": 1.0, "b": true, "c": "x", "d": nil, "e": []any{1, "2"}, "f": map[string]any{"y": 2, "z": 1}, "g": 0}

	type input struct {
		name string
		r    troupe.Router
		in   troupe.RouteInput
	}
	ctx := troupe.NewContext("abc", "demo")
	inputs := []input{
		{name: "seed 001 task", r: seed001, in: troupe.RouteInput{Query: "task", Available: []string{"agent1", "agent2", "llm_generate"}}},
		{name: "seed 001 example", r: seed001, in: troupe.RouteInput{Query: "search web for Python docs", Available: []string{"web_search", "rag_query", "llm_generate"}}},
		{name: "seed 001 no agent", r: seed001, in: troupe.RouteInput{Query: "task", Available: []string{"agent1", "agent2"}}},
		{name: "wide trigger", r: wide, in: troupe.RouteInput{State: wideState, Available: []string{"w", "x", "y", "z"}}},
		{name: "wide skipped", r: wide, in: troupe.RouteInput{
			State: wideState, ParsedQuery: map[string]any{"intent": "i1", "kpis": []any{"k3", "k2"}}, Available: []string{"z"},
		}},
		{name: "wide kpis", r: wide, in: troupe.RouteInput{ParsedQuery: map[string]any{"kpis": []string{"k2", "k1"}}, Available: []string{"y", "x"}}},
		{name: "wide nothing", r: wide, in: troupe.RouteInput{ParsedQuery: map[string]any{"intent": "i1", "kpis": "k1"}}},
		{name: "analytics intent", r: analytics(), in: troupe.RouteInput{
			ParsedQuery: map[string]any{"intent": "comparative", "kpis": []any{"NRx"}}, Available: allAnalytics[1:],
		}},
		{name: "planner's task", r: coordinator, in: troupe.RouteInput{Task: troupe.Task{ID: route.TaskID}, Query: "why?", Available: tutor.Agents()}},
	}
	for _, msg := range []string{"", "hmm", "Teach me fractions", "anyway, quiz me", "What’s next?", "resume", "continue quiz", "my progress", "how does it work"} {
		for _, state := range []map[string]any{
			nil,
			{"quiz_paused": true},
			{"quiz_paused": false, "current_topic": "fractions"},
			{"quiz_complete": true, "last_routed_to": "quiz", "quiz_paused": false, "current_topic": nil},
		} {
			inputs = append(inputs, input{
				name: "coordinator " + msg,
				r:    coordinator,
				in:   troupe.RouteInput{Query: msg, State: state, Available: tutor.Agents()},
			})
			inputs = append(inputs, input{
				name: "coordinator without quiz " + msg,
				r:    coordinator,
				in:   troupe.RouteInput{Query: msg, State: state, Available: []string{"pathplanner", "tutor"}},
			})
		}
	}

	for _, tc := range inputs {
		t.Run(tc.name, func(t *testing.T) {
			first := decisionJSON(t, tc.r, tc.in, ctx)
			for i := range 100 {
				// A fresh copy of the input each time, so maps are rebuilt and iterate anew.
				if got := decisionJSON(t, tc.r, cloneInput(tc.in), ctx); !bytes.Equal(got, first) {
					t.Fatalf("run %d differs:\nfirst %s\nnow   %s", i+2, first, got)
				}
			}
		})
	}
}

func cloneInput(in troupe.RouteInput) troupe.RouteInput {
	in.ParsedQuery = cloneMap(in.ParsedQuery)
	in.State = cloneMap(in.State)
	in.Available = slices.Clone(in.Available)
	return in
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneMap(sub)
		}
		out[k] = v
	}
	return out
}

// FuzzRoute: whatever the message, state and parsed query, Route neither panics nor changes
// its mind, only picks available agents, and fails only with troupe.ErrUnknownAgent. A
// pattern always finds itself between other words, and a message routes as its NFC, NFD,
// NFKC and NFKD forms do.
func FuzzRoute(f *testing.F) {
	f.Add("anyway, quiz me", []byte(`{"quiz_paused":true}`), "causal", "NRx", "what's next")
	f.Add("What’s next?", []byte(`{"quiz_complete":true,"last_routed_to":"quiz"}`), "comparative", "MAU", "why")
	f.Add("resume", []byte(`{"quiz_paused":1}`), "", "", "  ")
	f.Add("\xff\xfe teach\u00a0me", []byte(`[1,2]`), "trend", "data_freshness", "\u212a")
	f.Add("", []byte(`{"quiz_paused":true,"x":{"y":[null,1e308]}}`), "ml_training", "TRx", "straẞe")
	f.Add("un cafe\u0301 noir", []byte(`{}`), "", "", "café")
	f.Add("ｑｕｉｚ　ｍｅ", []byte(`{"quiz_paused":false}`), "", "", "ﬁnd")

	coordinator := tutor.Coordinator()
	rules := analytics()
	ctx := troupe.NewContext("fuzz", "")
	f.Fuzz(func(t *testing.T, message string, stateJSON []byte, intent, kpi, pattern string) {
		var state map[string]any
		_ = json.Unmarshal(stateJSON, &state) // not an object: no state
		in := troupe.RouteInput{
			Query:       message,
			ParsedQuery: map[string]any{"intent": intent, "kpis": []any{kpi, "NRx"}},
			State:       state,
			Available:   tutor.Agents(),
		}

		d, err := coordinator.Route(context.Background(), in, ctx)
		if err != nil {
			t.Fatalf("coordinator: %v", err) // the default, tutor, is always available
		}
		if !slices.Contains(tutor.Agents(), d.Target) {
			t.Fatalf("coordinator chose %q", d.Target)
		}
		if a, b := decisionJSON(t, coordinator, in, ctx), decisionJSON(t, coordinator, cloneInput(in), ctx); !bytes.Equal(a, b) {
			t.Fatalf("coordinator is not deterministic:\n%s\n%s", a, b)
		}

		in.Available = []string{"gap_analyzer", "health_score", kpi}
		d, err = rules.Route(context.Background(), in, ctx)
		if err != nil && !errors.Is(err, troupe.ErrUnknownAgent) {
			t.Fatalf("analytics: unexpected error %v", err)
		}
		if err == nil && !slices.Contains(in.Available, d.Target) {
			t.Fatalf("analytics chose unavailable %q", d.Target)
		}
		if a, b := decisionJSON(t, rules, in, ctx), decisionJSON(t, rules, cloneInput(in), ctx); !bytes.Equal(a, b) {
			t.Fatalf("analytics is not deterministic:\n%s\n%s", a, b)
		}

		// Patterns and When drawn from the fuzzer.
		self := &route.Rules{
			Triggers: []route.Trigger{
				{Name: "state", Patterns: []string{pattern}, When: state, Target: "state"},
				{Name: "self", Patterns: []string{pattern}, Target: "hit"},
			},
			Default: "miss",
		}
		available := []string{"hit", "miss"}
		d, err = self.Route(context.Background(), troupe.RouteInput{Query: "x " + pattern + " y", Available: available}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		hasWord := false
		for _, r := range pattern {
			if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
				hasWord = true
			}
		}
		if hasWord && d.Target != "hit" {
			t.Fatalf("pattern %q not found in %q: %+v", pattern, "x "+pattern+" y", d)
		}
		in = troupe.RouteInput{Query: message, State: state, Available: []string{"state", "hit", "miss"}}
		if a, b := decisionJSON(t, self, in, ctx), decisionJSON(t, self, cloneInput(in), ctx); !bytes.Equal(a, b) {
			t.Fatalf("pattern rules are not deterministic:\n%s\n%s", a, b)
		}

		// Unicode-equivalent spellings of the message route alike.
		want := decisionJSON(t, self, in, ctx)
		for _, form := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
			eq := cloneInput(in)
			eq.Query = form.String(message)
			if got := decisionJSON(t, self, eq, ctx); !bytes.Equal(got, want) {
				t.Fatalf("message %q and its form %q route differently:\n%s\n%s", message, eq.Query, want, got)
			}
		}
	})
}
