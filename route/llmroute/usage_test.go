package llmroute_test

import (
	"context"
	"errors"
	"testing"

	"github.com/troupehq/troupe"
)

// With no default in the rules, a classification that fails after the model answered (and
// reported 55 tokens) makes Route return an error; the engine counts a decision's TokensUsed
// even when routing fails, so the decision returned with the error should carry what asking
// the model cost.
func TestNoDefaultFailureKeepsUsage(t *testing.T) {
	r := rules()
	r.Default = ""
	rt, cl := newRouter(t, map[string]string{"hmm": `{"intent":"astrology"}`}, r)
	dec, err := rt.Route(context.Background(), input("hmm"), troupe.Context{})
	if !errors.Is(err, troupe.ErrUnknownAgent) {
		t.Fatalf("err = %v", err)
	}
	if cl.requests() != 1 {
		t.Fatalf("%d model requests, want 1", cl.requests())
	}
	if dec.TokensUsed == nil || *dec.TokensUsed != 55 {
		t.Errorf("decision with the error carries tokens %v, want the 55 the model reported", dec.TokensUsed)
	}
}
