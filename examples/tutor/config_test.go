package tutor_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/examples/tutor"
)

// TestConfigMatchesCoordinator: troupe.yaml's coordinator is the Go table, row for row, and
// its agents declare the state the Go registry declares.
func TestConfigMatchesCoordinator(t *testing.T) {
	f, err := config.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tutor.Coordinator(), f.RouteRules()); diff != "" {
		t.Errorf("troupe.yaml coordinator differs from tutor.Coordinator() (-go +yaml):\n%s", diff)
	}
	reg, err := tutor.Registry(tutor.NewSpecialists(nil, tutor.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := config.Catalog(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tutor.Agents() {
		want, _ := reg.Spec(name)
		got, ok := cat.Spec(name)
		if !ok {
			t.Errorf("troupe.yaml lacks %s", name)
			continue
		}
		if diff := cmp.Diff([2][]string{want.Reads, want.Writes}, [2][]string{got.Reads, got.Writes}); diff != "" {
			t.Errorf("%s reads/writes (-go +yaml):\n%s", name, diff)
		}
	}
}
