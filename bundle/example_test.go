package bundle_test

import (
	"encoding/json"
	"fmt"

	"github.com/troupehq/troupe/bundle"
)

func ExampleBuild() {
	decode := func(s string) any {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		return v
	}
	in := []bundle.Input{
		{ID: "r1", Seed: 11, Data: decode(`{"feasible":"yes","threshold":0.6}`)},
		{ID: "r2", Seed: 23, Data: decode(`{"feasible":"yes","threshold":0.8}`)},
		{ID: "r3", Seed: 47, Data: decode(`{"feasible":"no"}`), Errors: []string{"at /: missing property 'threshold'"}},
	}
	schema, _ := bundle.CompileSchema([]byte(`{"properties":{"threshold":{"minimum":0,"maximum":1}}}`))
	b, _, err := bundle.Build(bundle.Meta{Task: "feasibility", KMax: 3, Epsilon: 0.2}, in, bundle.Options{Schema: schema})
	if err != nil {
		panic(err)
	}
	s := b.Summary
	fmt.Println("confidence:", s.Confidence)
	fmt.Println("consensus:", s.Consensus)
	for _, d := range s.Disagreements {
		fmt.Println("disagreement:", d.Field, d.Values, d.Replicates, "missing", d.Missing)
	}
	fmt.Println("threshold mean:", *s.Distributions["threshold"].Mean)
	// Output:
	// confidence: 0.9
	// consensus: map[feasible:yes]
	// disagreement: threshold [0.6 0.8] [r1 r2] missing [r3]
	// disagreement: feasible [yes yes no] [r1 r2 r3] missing []
	// threshold mean: 0.7
}
