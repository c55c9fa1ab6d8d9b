package evidence_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/evidence"
)

// A valid replicate whose result asks for a human's review makes the bundle's result ask too,
// so the run's review sees it (the bundle answers with its replicates, as a collect_all group
// with its completed branches); an invalid replicate's request is not passed on, as its data is
// kept out of consensus.
func TestReplicateRequiresHuman(t *testing.T) {
	for _, tc := range []struct {
		name    string
		invalid bool
		want    bool
	}{
		{"valid replicate asks", false, true},
		{"invalid replicate asks", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := troupe.AgentFunc(func(ctx context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
				seed := d.UserContext[evidence.SeedKey].(int64)
				data := map[string]any{"score": 0.5, "verdict": "go"}
				if seed == 23 && tc.invalid {
					data = map[string]any{"score": 0.5} // no verdict: fails the schema
				}
				res := ok(data, 10, 0.01)
				res.RequiresHuman = seed == 23
				return res, nil
			})
			a, err := evidence.New(sub, evidence.Config{Schema: []byte(scoreSchema)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(t.Context(), dispatch(&recorder{}))
			if err != nil {
				t.Fatal(err)
			}
			if res.RequiresHuman != tc.want {
				t.Errorf("bundle's requires_human = %v, want %v", res.RequiresHuman, tc.want)
			}
		})
	}
}
