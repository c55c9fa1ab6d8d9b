package engine_test

import (
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
	"github.com/troupehq/troupe/troupetest"
)

// Seed 003's coordinator runs in the engine: the plan has one task with no agent, and the router
// picks the specialist at ROUTE time from the message and the session state.
func TestCoordinatorRoutesAtRouteTime(t *testing.T) {
	cases := []struct {
		message string
		state   map[string]any
		want    string
	}{
		{"I want to learn fractions", nil, "diagnostic"},
		{"quiz me on fractions", nil, "quiz"},
		{"resume", map[string]any{"quiz_paused": true}, "quiz"},
		{"resume", map[string]any{"quiz_paused": false}, "tutor"},
		{"what's next for me?", nil, "pathplanner"},
		{"hmm", nil, "tutor"},
	}
	for _, tc := range cases {
		t.Run(tc.message, func(t *testing.T) {
			var pairs []any
			scripts := map[string]*troupetest.Script{}
			for _, n := range tutor.Agents() {
				scripts[n] = troupetest.NewScript()
				pairs = append(pairs, n, scripts[n])
			}
			coord := tutor.Coordinator()
			eng := newEngine(t, engine.Config{Registry: agents(t, pairs...), Planner: route.Planner(coord), Router: coord})
			evs := run(t, eng, troupe.Request{Query: tc.message, State: tc.state})
			routes := troupetest.Find(evs, troupe.KindRouteDecided, "")
			if len(routes) != 1 || routes[0].Agent != tc.want {
				t.Fatalf("routed to %v, want %s", routes, tc.want)
			}
			if d := routes[0].Data.(*troupe.RoutingDecision); strings.TrimSpace(d.Reason) == "" {
				t.Errorf("decision without a reason: %+v", d)
			}
			for n, s := range scripts {
				if want := map[bool]int{true: 1, false: 0}[n == tc.want]; s.Calls() != want {
					t.Errorf("%s ran %d times", n, s.Calls())
				}
			}
		})
	}
}
