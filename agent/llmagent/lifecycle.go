package llmagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupehq/troupe"
)

var (
	_ troupe.Setupper   = (*Agent)(nil)
	_ troupe.Teardowner = (*Agent)(nil)
)

// Setup sets up the agent's tools that hold resources (troupe.Setupper), each once, in the
// order of Config.Tools. When one fails or panics, the tools already set up are torn down, the
// last first, and the error names the tool (and any teardown that failed too).
func (a *Agent) Setup(ctx context.Context) error {
	for i, t := range a.c.held {
		su, ok := t.(troupe.Setupper)
		if !ok {
			continue
		}
		if err := troupe.CallSafely(func() error { return su.Setup(ctx) }); err != nil {
			err = fmt.Errorf("llmagent: setup of tool %s: %w", t.Info().Name, err)
			return errors.Join(err, tearDown(ctx, a.c.held[:i], true))
		}
	}
	return nil
}

// Teardown tears down the agent's tools (troupe.Teardowner), the last first, and joins the
// errors; one tool's failure does not keep the others up. Unlike Setup's cleanup it includes
// the tools that have Teardown alone: flow.AsTool's waits there for calls abandoned past their
// timeout, which whoever owns the tool must do before letting go of it.
func (a *Agent) Teardown(ctx context.Context) error {
	return tearDown(ctx, a.c.held, false)
}

// tearDown calls Teardown on tools, the last first; setUpOnly leaves out those without Setup.
func tearDown(ctx context.Context, tools []troupe.Tool, setUpOnly bool) error {
	var errs []error
	for i := len(tools) - 1; i >= 0; i-- {
		t := tools[i]
		if _, ok := t.(troupe.Setupper); setUpOnly && !ok {
			continue
		}
		td, ok := t.(troupe.Teardowner)
		if !ok {
			continue
		}
		if err := troupe.CallSafely(func() error { return td.Teardown(ctx) }); err != nil {
			errs = append(errs, fmt.Errorf("llmagent: teardown of tool %s: %w", t.Info().Name, err))
		}
	}
	return errors.Join(errs...)
}

// held returns the tools that have Setup or Teardown, in order. New refuses a tool offered
// twice, so each is set up once.
func held(tools []troupe.Tool) []troupe.Tool {
	var out []troupe.Tool
	for _, t := range tools {
		_, su := t.(troupe.Setupper)
		_, td := t.(troupe.Teardowner)
		if su || td {
			out = append(out, t)
		}
	}
	return out
}
