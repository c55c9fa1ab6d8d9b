package llmagent_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/evidence"
)

// An evidence bundle over an LLM agent sends each replicate its own seed: replicates that all
// sent Config.Seed would be one sample asked twice.
func TestBundleReplicatesSendTheirOwnSeeds(t *testing.T) {
	// The first two replicates disagree, so the bundle runs all three.
	srv := newCompletionServer(t,
		reply{content: "yes", usage: [2]int{3, 2}},
		reply{content: "no", usage: [2]int{3, 2}},
		reply{content: "yes", usage: [2]int{3, 2}})
	judge := newAgent(t, llmagent.Config{BaseURL: srv.URL(), Seed: new(int64(7)), Prompt: "{{.Query}}"})
	b := evidence.Bundle(judge, evidence.Config{K: 3})
	if _, err := b.Run(t.Context(), dispatch("is it feasible?", nil)); err != nil {
		t.Fatal(err)
	}
	var seeds []float64
	for _, r := range srv.Requests() {
		seeds = append(seeds, r.Body["seed"].(float64))
	}
	slices.Sort(seeds)
	// The bundle's seeds, never the configured 7.
	if diff := cmp.Diff([]float64{11, 23, 47}, seeds); diff != "" {
		t.Errorf("seeds sent (-want +got):\n%s", diff)
	}
}
