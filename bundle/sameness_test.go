package bundle_test

import (
	"testing"

	"github.com/troupehq/troupe/bundle"
)

// Two valid replicates write different text in a "text" field whose distance, same words in
// another order, is 0: the field is no consensus (every valid replicate must hold the same
// value) and it is a disagreement (replicates with data differ), ranked last. It was reported as
// agreed, with the first replicate's text, and the second's answer appeared nowhere.
func TestTextFieldConsensusNeedsTheSameText(t *testing.T) {
	sc, err := bundle.CompileSchema([]byte(`{"properties":{"why":{"x-distance":"text"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := []bundle.Input{
		{ID: "r1", Data: map[string]any{"why": "cost is not the risk"}},
		{ID: "r2", Data: map[string]any{"why": "the risk is not cost"}},
	}
	s := bundle.Summarize(in, bundle.Options{Schema: sc})
	if v, ok := s.Consensus["why"]; ok {
		t.Errorf("consensus why = %q, but r2 holds %q", v, "the risk is not cost")
	}
	found := false
	for _, d := range s.Disagreements {
		found = found || d.Field == "why"
	}
	if !found {
		t.Errorf("no disagreement on why, where r1 and r2 differ: %+v", s.Disagreements)
	}
}

// A Counts key is a string value as it is, and its JSON text when other kinds of values share
// the field: the string "3" beside the numbers 3, which are averaged rather than counted, is
// named "\"3\"", so a reader does not take it for one of them.
func TestCountsQuoteAStringBesideNumbers(t *testing.T) {
	in := []bundle.Input{
		{ID: "r1", Data: map[string]any{"x": 3.0}},
		{ID: "r2", Data: map[string]any{"x": "3"}},
		{ID: "r3", Data: map[string]any{"x": 3.0}},
	}
	d := bundle.Summarize(in, bundle.Options{}).Distributions["x"]
	if _, ok := d.Counts[`"3"`]; !ok {
		t.Errorf("counts %v (mean %v, n %d): the string \"3\" is not told apart from the number 3", d.Counts, *d.Mean, d.N)
	}
}
