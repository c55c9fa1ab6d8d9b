package troupe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/troupehq/troupe"
)

var _ troupe.Catalog = troupe.NewRegistry()

func TestRegistryAdd(t *testing.T) {
	tests := []struct {
		name    string
		add     string
		agent   troupe.Agent
		opts    []troupe.Option
		wantErr string // substring; "" means success
	}{
		{"new name", "explainer", nopAgent, nil, ""},
		{"empty name", "", nopAgent, nil, "empty"},
		{"duplicate", "causal_impact", nopAgent, nil, `"causal_impact" registered twice`},
		{"nil agent", "oracle", nil, nil, "nil"},
		{"negative timeout", "oracle", nopAgent, []troupe.Option{troupe.WithTimeout(-time.Second)}, "negative timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := troupe.NewRegistry()
			if err := reg.Add("causal_impact", nopAgent); err != nil {
				t.Fatal(err)
			}
			err := reg.Add(tt.add, tt.agent, tt.opts...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Add: %v", err)
				}
				if !reg.Has(tt.add) || reg.Len() != 2 {
					t.Errorf("after Add: Has = %v, Len = %d", reg.Has(tt.add), reg.Len())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "troupe: ") {
				t.Fatalf("Add error = %v, want one containing %q", err, tt.wantErr)
			}
			if reg.Len() != 1 {
				t.Errorf("Len() = %d after a rejected Add, want 1", reg.Len())
			}
			if diff := cmp.Diff([]string{"causal_impact"}, reg.Names()); diff != "" {
				t.Errorf("Names() after a rejected Add (-want +got):\n%s", diff)
			}
			if tt.add != "causal_impact" && tt.add != "" && reg.Has(tt.add) {
				t.Errorf("rejected agent %q is registered", tt.add)
			}
		})
	}
}

func TestRegistryNamesKeepOrder(t *testing.T) {
	reg := seedRegistry(t)
	if diff := cmp.Diff(seedAgents, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if reg.Len() != len(seedAgents) {
		t.Errorf("Len() = %d, want %d", reg.Len(), len(seedAgents))
	}
	names := reg.Names()
	names[0] = "mutated"
	if reg.Names()[0] != seedAgents[0] || reg.Has("mutated") {
		t.Error("modifying the slice Names returned changed the registry")
	}
	for _, n := range seedAgents {
		if !reg.Has(n) {
			t.Errorf("Has(%q) = false", n)
		}
	}
	if reg.Has("oracle") {
		t.Error(`Has("oracle") = true`)
	}
}

func TestRegistryOptions(t *testing.T) {
	guard := troupe.GuardrailFuncs{ID: "pii"}
	tests := []struct {
		name string
		opts []troupe.Option
		want troupe.AgentSpec
	}{
		{"none", nil, troupe.AgentSpec{}},
		{"reads and writes accumulate", []troupe.Option{
			troupe.Reads("scope"), troupe.Reads("data", "features"), troupe.Writes("effect"), troupe.Writes("drivers"),
		}, troupe.AgentSpec{Reads: []string{"scope", "data", "features"}, Writes: []string{"effect", "drivers"}}},
		{"after", []troupe.Option{troupe.After("scope_definer"), troupe.After("data_preparer", "model_selector")},
			troupe.AgentSpec{DependsOn: []string{"scope_definer", "data_preparer", "model_selector"}}},
		{"timeout, last wins", []troupe.Option{troupe.WithTimeout(time.Second), troupe.WithTimeout(30 * time.Second)},
			troupe.AgentSpec{Timeout: 30 * time.Second}},
		{"description", []troupe.Option{troupe.Describe("estimates causal effects")},
			troupe.AgentSpec{Description: "estimates causal effects"}},
		{"guardrails", []troupe.Option{troupe.Guard(guard), troupe.Guard(guard)},
			troupe.AgentSpec{Guardrails: []troupe.Guardrail{guard, guard}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := troupe.NewRegistry()
			if err := reg.Add("causal_impact", nopAgent, tt.opts...); err != nil {
				t.Fatal(err)
			}
			got, ok := reg.Spec("causal_impact")
			if !ok {
				t.Fatal("Spec not found")
			}
			if got.Name != "causal_impact" || got.Agent == nil {
				t.Errorf("Spec = name %q, agent %v", got.Name, got.Agent)
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreFields(troupe.AgentSpec{}, "Name", "Agent"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Spec (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("registered agent runs", func(t *testing.T) {
		reg := troupe.NewRegistry().MustAdd("echo", troupe.AgentFunc(func(_ context.Context, d *troupe.Dispatch) (*troupe.Result, error) {
			return &troupe.Result{AgentResult: map[string]any{"query": d.Query}}, nil
		}))
		spec, _ := reg.Spec("echo")
		r, err := spec.Agent.Run(t.Context(), &troupe.Dispatch{Query: "hi"})
		if err != nil || r.AgentResult["query"] != "hi" {
			t.Errorf("Run = %+v, %v", r, err)
		}
	})
	t.Run("unknown spec", func(t *testing.T) {
		if s, ok := troupe.NewRegistry().Spec("x"); ok || s != nil {
			t.Errorf("Spec(x) = %v, %v", s, ok)
		}
	})
}

func TestRegistryMustAdd(t *testing.T) {
	reg := troupe.NewRegistry().MustAdd("a", nopAgent).MustAdd("b", nopAgent)
	if diff := cmp.Diff([]string{"a", "b"}, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustAdd of a duplicate did not panic")
		}
	}()
	reg.MustAdd("a", nopAgent)
}
