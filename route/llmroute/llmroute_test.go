package llmroute_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/route/llmroute"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// classifier is a loopback Chat Completions endpoint that answers each message with the
// intent its table gives (as the JSON object the router's schema asks for), or with a
// status when the table says "HTTP <code>". It records the request bodies.
type classifier struct {
	table map[string]string

	mu     sync.Mutex
	bodies []map[string]any
}

func (c *classifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, body)
	c.mu.Unlock()
	msgs := body["messages"].([]any)
	query := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	answer := c.table[query]
	w.Header().Set("Content-Type", "application/json")
	var code int
	if _, err := fmt.Sscanf(answer, "HTTP %d", &code); err == nil {
		w.WriteHeader(code)
		fmt.Fprint(w, `{"error":{"message":"classifier unavailable"}}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-r", "object": "chat.completion", "created": 1, "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": answer}}},
		"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
	})
}

func (c *classifier) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bodies)
}

// rules is seed 000's intent table for a few intents, with a default.
func rules() *route.Rules {
	return &route.Rules{
		Triggers: []route.Trigger{{Name: "deploy", Patterns: []string{"deploy"}, Target: "model_deployer"}},
		Intents: map[string][]string{
			"causal":      {"causal_impact"},
			"trend":       {"drift_monitor"},
			"comparative": {"gap_analyzer", "heterogeneous_optimizer"},
		},
		Default: "explainer",
	}
}

var available = []string{"causal_impact", "drift_monitor", "gap_analyzer", "model_deployer", "explainer"}

func newRouter(t *testing.T, table map[string]string, r troupe.Router) (*llmroute.Router, *classifier) {
	t.Helper()
	cl := &classifier{table: table}
	srv := httptest.NewServer(cl)
	t.Cleanup(srv.Close)
	rt, err := llmroute.New(llmroute.Config{Rules: r, LLM: llmagent.Config{BaseURL: srv.URL + "/v1", Model: "router-model", APIKeyEnv: "LLMROUTE_TEST_KEY", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	return rt, cl
}

func input(query string) troupe.RouteInput {
	return troupe.RouteInput{Query: query, ParsedQuery: map[string]any{"kpis": []any{}}, Available: available}
}

func TestRuleMatchAsksNoModel(t *testing.T) {
	rt, cl := newRouter(t, nil, rules())
	dec, err := rt.Route(context.Background(), input("please deploy the churn model"), troupe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Target != "model_deployer" || dec.Metadata["source"] != "trigger" || cl.requests() != 0 {
		t.Errorf("decision %+v after %d model requests", dec, cl.requests())
	}
}

func TestClassifiesWhenNoRuleMatches(t *testing.T) {
	rt, cl := newRouter(t, map[string]string{"why did sales drop in Q3?": `{"intent":"causal"}`}, rules())
	dec, err := rt.Route(context.Background(), input("why did sales drop in Q3?"), troupe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	want := troupe.RoutingDecision{
		Target: "causal_impact",
		Reason: `no rule matched the message; router-model classified its intent as "causal": intent "causal" routes to causal_impact (candidate 1 of 1)`,
		Metadata: map[string]any{"source": "intent", "intent": "causal", "candidates": []string{"causal_impact"},
			"classifier": "llm", "llm_intent": "causal", "llm_model": "router-model"},
		TokensUsed: troupe.Ptr[int64](55), // what the classifier's answer reported using
	}
	if diff := cmp.Diff(want, dec); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	body := cl.bodies[0]
	rf := body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	enum := rf["schema"].(map[string]any)["properties"].(map[string]any)["intent"].(map[string]any)["enum"]
	if body["temperature"] != 0.0 || body["seed"] != 0.0 || len(enum.([]any)) != 8 {
		t.Errorf("request: temperature %v seed %v enum %v", body["temperature"], body["seed"], enum)
	}
	system := body["messages"].([]any)[0].(map[string]any)["content"].(string)
	for _, in := range llmroute.Intents {
		if !strings.Contains(system, "- "+in.Name+": ") {
			t.Errorf("system prompt does not list %s:\n%s", in.Name, system)
		}
	}
}

// TestClassifiedIntentReplacesIntentType: the rules read the parsed query's intent from
// "intent" or "intent_type", so the model's intent replaces both rather than conflicting
// with an "intent_type" the rules could not place.
func TestClassifiedIntentReplacesIntentType(t *testing.T) {
	for _, parsed := range []map[string]any{
		{"intent_type": "forecast"},
		{"intent": "forecast", "intent_type": "forecast"},
	} {
		rt, _ := newRouter(t, map[string]string{"why did sales drop in Q3?": `{"intent":"causal"}`}, rules())
		in := input("why did sales drop in Q3?")
		in.ParsedQuery = parsed
		dec, err := rt.Route(context.Background(), in, troupe.Context{})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Target != "causal_impact" || dec.Metadata["llm_intent"] != "causal" || dec.Metadata["llm_fallback"] != nil {
			t.Errorf("parsed %v: decision %+v, want causal_impact by the classified intent", parsed, dec)
		}
		if parsed["intent_type"] != "forecast" {
			t.Errorf("parsed query modified: %v", parsed)
		}
	}
}

func TestSameInputsSameDecision(t *testing.T) {
	rt, cl := newRouter(t, map[string]string{"how has churn moved this year": `{"intent":"trend"}`}, rules())
	var first []byte
	var wg sync.WaitGroup
	decs := make([][]byte, 8)
	for i := range decs {
		wg.Go(func() {
			dec, err := rt.Route(context.Background(), input("how has churn moved this year"), troupe.Context{})
			if err != nil {
				t.Error(err)
			}
			decs[i], _ = json.Marshal(dec)
		})
	}
	wg.Wait()
	// Only the call that asked the model carries its tokens; the rest, and every later call,
	// are answered without asking and cost nothing. Apart from that the decisions are equal.
	charged := 0
	for i := range decs {
		if strings.Contains(string(decs[i]), `"tokens_used":55`) {
			charged++
			decs[i] = []byte(strings.Replace(string(decs[i]), `,"tokens_used":55`, "", 1))
		}
	}
	if charged != 1 {
		t.Errorf("%d concurrent decisions carry the classification's tokens, want 1", charged)
	}
	first = decs[0]
	for i, d := range decs {
		if string(d) != string(first) {
			t.Errorf("decision %d differs:\n%s\n%s", i, d, first)
		}
	}
	asked := cl.requests()
	for range 3 {
		again, _ := rt.Route(context.Background(), input("how has churn moved this year"), troupe.Context{})
		if b, _ := json.Marshal(again); string(b) != string(first) || !strings.Contains(string(b), `"drift_monitor"`) {
			t.Errorf("later decision %s, want %s", b, first)
		}
	}
	if n := cl.requests(); n != asked {
		t.Errorf("%d model requests after the first calls, %d after three more: a later call must be answered from the cache", asked, n)
	}
	if n := cl.requests(); n > 2 {
		// Concurrent first calls share one request; at most one straggler may start after the
		// shared call finished and before the cache was read, never one per call.
		t.Errorf("%d model requests for one input", n)
	}
}

// TestCacheKeepsWhatIsUsed: the cache forgets the least recently used classification, so a
// query asked again and again stays cached while more one-off queries than the cache holds
// pass through, and a query not asked since it was cached is what goes.
func TestCacheKeepsWhatIsUsed(t *testing.T) {
	const size = 4
	table := map[string]string{}
	query := func(i int) string { return fmt.Sprintf("how did region %d do", i) }
	for i := range 3 * size {
		table[query(i)] = `{"intent":"trend"}`
	}
	cl := &classifier{table: table}
	srv := httptest.NewServer(cl)
	t.Cleanup(srv.Close)
	rt, err := llmroute.New(llmroute.Config{Rules: rules(), CacheSize: size,
		LLM: llmagent.Config{BaseURL: srv.URL + "/v1", Model: "router-model", APIKeyEnv: "LLMROUTE_TEST_KEY", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(q string) {
		t.Helper()
		if dec, err := rt.Route(t.Context(), input(q), troupe.Context{}); err != nil || dec.Target != "drift_monitor" {
			t.Fatalf("Route(%q) = %+v, %v", q, dec, err)
		}
	}

	hot, cold := query(0), query(1)
	for i := range size { // fill the cache; the hot query is the oldest entry
		ask(query(i))
	}
	for i := size; i < 3*size; i++ { // twice the cache's size in new queries
		before := cl.requests()
		ask(hot)
		if n := cl.requests(); n != before {
			t.Fatalf("after %d new queries the hot query asked the model again: it was evicted", i-size)
		}
		ask(query(i))
		if n := cl.requests(); n != before+1 {
			t.Fatalf("new query %d: %d model requests, want 1", i, n-before)
		}
	}
	before := cl.requests()
	ask(cold)
	if n := cl.requests(); n != before+1 {
		t.Errorf("a query not used since the cache filled is still cached: the cache is not bounded")
	}
}

func TestFallsBackToDefault(t *testing.T) {
	tests := []struct {
		name, answer, reason string
		requests             int // after two calls: failed classifications are not cached
	}{
		{"label not an intent", `{"intent":"astrology"}`, "astrology", 2},
		{"not JSON", `causal, I think`, "not JSON", 2},
		{"server error", "HTTP 503", "HTTP 503", 2},
		{"rules place no agent for the intent", `{"intent":"monitoring"}`, `no agent for intent "monitoring"`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt, cl := newRouter(t, map[string]string{"tell me something": tc.answer}, rules())
			dec, err := rt.Route(context.Background(), input("tell me something"), troupe.Context{})
			if err != nil {
				t.Fatal(err)
			}
			fb, _ := dec.Metadata["llm_fallback"].(string)
			if dec.Target != "explainer" || dec.Metadata["source"] != "default" || !strings.Contains(fb, tc.reason) || !strings.Contains(dec.Reason, "LLM classification failed") {
				t.Errorf("decision %+v, want the default with a reason mentioning %q", dec, tc.reason)
			}
			again, _ := rt.Route(context.Background(), input("tell me something"), troupe.Context{})
			if tc.requests == 1 { // classified and cached: the second decision asked no model
				if dec.TokensUsed == nil || again.TokensUsed != nil {
					t.Errorf("tokens %v then %v, want the first decision charged and the cached one not", dec.TokensUsed, again.TokensUsed)
				}
				again.TokensUsed, again.CostDollars = dec.TokensUsed, dec.CostDollars
			}
			if n := cl.requests(); n != tc.requests || !cmp.Equal(again, dec) {
				t.Errorf("%d requests, want %d; second decision %+v", n, tc.requests, again)
			}
		})
	}
}

func TestTransportFailureFallsBack(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	rt, err := llmroute.New(llmroute.Config{Rules: rules(), LLM: llmagent.Config{BaseURL: url + "/v1", Model: "m", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rt.Route(context.Background(), input("anything at all"), troupe.Context{})
	if err != nil || dec.Target != "explainer" || dec.Metadata["llm_fallback"] == nil {
		t.Errorf("decision %+v, err %v", dec, err)
	}
}

func TestNoDefaultReturnsTheRulesErrorWithTheReason(t *testing.T) {
	r := rules()
	r.Default = ""
	rt, _ := newRouter(t, map[string]string{"hmm": `{"intent":"astrology"}`}, r)
	_, err := rt.Route(context.Background(), input("hmm"), troupe.Context{})
	if !errors.Is(err, troupe.ErrUnknownAgent) || !strings.Contains(err.Error(), "LLM classification failed") {
		t.Errorf("err = %v", err)
	}
}

// A parsed query the rules refuse (an intent that is not a string) is an error, as it is for
// the rules alone: the model is not asked to route around it.
func TestRulesInputErrorAsksNoModel(t *testing.T) {
	rt, cl := newRouter(t, map[string]string{"why?": `{"intent":"causal"}`}, rules())
	in := input("why?")
	in.ParsedQuery = map[string]any{"intent": 5}
	dec, err := rt.Route(context.Background(), in, troupe.Context{})
	var es troupe.ValidationErrors
	if !errors.As(err, &es) || errors.Is(err, troupe.ErrUnknownAgent) || !strings.Contains(err.Error(), `"intent"`) {
		t.Errorf("decision %+v, err %v; want the rules' error naming intent", dec, err)
	}
	if n := cl.requests(); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  llmroute.Config
		want string
	}{
		{llmroute.Config{LLM: llmagent.Config{Model: "m"}}, "rules: required"},
		{llmroute.Config{Rules: rules(), Intents: []llmroute.Intent{}, LLM: llmagent.Config{Model: "m"}}, "intents: empty"},
		{llmroute.Config{Rules: rules(), Intents: []llmroute.Intent{{"a", ""}, {"a", ""}}, LLM: llmagent.Config{Model: "m"}}, `repeated name "a"`},
		{llmroute.Config{Rules: rules()}, "model: required"},
	} {
		if _, err := llmroute.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "llmroute: ") {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// Cancelling the run's context stops a classification in flight: Route returns the cause at
// once, not the default after the model's timeout.
func TestCancelStopsClassification(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a model that never answers in time
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	rt, err := llmroute.New(llmroute.Config{Rules: rules(), Timeout: time.Minute,
		LLM: llmagent.Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	routeCancelledSoon(t, rt, "anything at all", "the model")
}

// routeCancelledSoon routes msg with a context cancelled 50 ms later, and checks that Route
// returns the context's cause then, not once the model request it waits for (what) ends.
func routeCancelledSoon(t *testing.T, rt *llmroute.Router, msg, what string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("user pressed Ctrl-C")
	time.AfterFunc(50*time.Millisecond, func() { cancel(stop) })
	start := time.Now()
	dec, err := rt.Route(ctx, input(msg), troupe.Context{})
	if !errors.Is(err, stop) {
		t.Errorf("Route = %+v, %v; want the context's cause", dec, err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Route returned after %v: it waited for %s, not its own context", waited, what)
	}
}

// hangingFirst is a classifier whose first request hangs until the client gives up; the
// requests after it are answered by next. seen is closed when the first request arrives.
func hangingFirst(t *testing.T, next http.Handler) (url string, seen <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		once.Do(func() { first = true })
		if !first {
			next.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body) // so that the server notices the client leave
		close(ch)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", ch
}

// hangingRouter is a router over hangingFirst's classifier.
func hangingRouter(t *testing.T, next http.Handler) (*llmroute.Router, <-chan struct{}) {
	t.Helper()
	url, seen := hangingFirst(t, next)
	rt, err := llmroute.New(llmroute.Config{Rules: rules(), Timeout: time.Minute,
		LLM: llmagent.Config{BaseURL: url, Model: "m", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	return rt, seen
}

// A run waiting for another run's classification of the same message stops when it is
// cancelled itself, at once, not when the other's request ends.
func TestCancelStopsWaitingForAnotherClassification(t *testing.T) {
	rt, seen := hangingRouter(t, http.NotFoundHandler())
	askerCtx, stopAsker := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopAsker()
	wg.Go(func() { rt.Route(askerCtx, input("same message"), troupe.Context{}) })
	<-seen
	routeCancelledSoon(t, rt, "same message", "the other run's request")
}

// When the run that asked the model is cancelled, a run waiting for the same classification
// is not: it asks the model itself and routes on the answer, rather than falling back to the
// default with "context canceled" as the reason.
func TestAnotherRunsCancelIsNoFailure(t *testing.T) {
	rt, seen := hangingRouter(t, &classifier{table: map[string]string{"same message": `{"intent":"causal"}`}})
	askerCtx, stopAsker := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var askerErr error
	wg.Go(func() { _, askerErr = rt.Route(askerCtx, input("same message"), troupe.Context{}) })
	<-seen
	time.AfterFunc(50*time.Millisecond, stopAsker) // while the call below waits for the asker
	dec, err := rt.Route(context.Background(), input("same message"), troupe.Context{})
	wg.Wait()
	if err != nil || dec.Target != "causal_impact" || dec.Metadata["llm_fallback"] != nil {
		t.Errorf("Route = %+v, %v; want causal_impact, classified", dec, err)
	}
	if !errors.Is(askerErr, context.Canceled) {
		t.Errorf("the cancelled run's Route returned %v, want context.Canceled", askerErr)
	}
}
