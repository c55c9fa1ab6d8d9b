package flow

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupehq/troupe"
)

// A composite sets its members up as the engine sets up a run's agents: Setup calls
// troupe.Setupper on each member that has it, in order; Teardown calls troupe.Teardowner, last
// member first, on the members Setup sets up (a member that only tears down is left alone, as
// the engine leaves such an agent). The engine calls a composite's Setup once per run that plans
// it, not once per member dispatch or loop cycle, so a member that opens a connection in Setup
// has it for every dispatch the composite makes in that run. Members nest: a composite member
// forwards to its own members.
//
// Teardown first waits for the members the composite abandoned past their timeout (see
// WithTimeout in the package doc) to return, until ctx ends, so that no member is torn down
// while one of its dispatches still runs; then it tears the members down whatever the
// abandoned ones do, and reports those still running in its error.

// Setup sets up the sequence's members (troupe.Setupper).
func (s *SequentialAgent) Setup(ctx context.Context) error {
	return setUp(ctx, "sequential", s.agents)
}

// Teardown waits for abandoned members, then tears down the members Setup sets up, the last
// first (troupe.Teardowner).
func (s *SequentialAgent) Teardown(ctx context.Context) error {
	waited := waitStrays(ctx, &s.strays, "sequential")
	return errors.Join(waited, tearDown(ctx, "sequential", s.agents))
}

// Setup sets up the group's members (troupe.Setupper).
func (p *ParallelAgent) Setup(ctx context.Context) error {
	return setUp(ctx, "parallel", p.agents)
}

// Teardown waits for abandoned members, then tears down the members Setup sets up, the last
// first (troupe.Teardowner).
func (p *ParallelAgent) Teardown(ctx context.Context) error {
	waited := waitStrays(ctx, &p.strays, "parallel")
	return errors.Join(waited, tearDown(ctx, "parallel", p.agents))
}

// Setup sets up the loop's agent (troupe.Setupper).
func (l *LoopAgent) Setup(ctx context.Context) error {
	return setUp(ctx, "loop", l.agent)
}

// Teardown waits for abandoned cycles, then tears down the loop's agent when Setup sets it up
// (troupe.Teardowner).
func (l *LoopAgent) Teardown(ctx context.Context) error {
	waited := waitStrays(ctx, &l.strays, "loop")
	return errors.Join(waited, tearDown(ctx, "loop", l.agent))
}

// setUp calls Setup on the members that have it, in order. When one fails or panics, the
// members already set up are torn down, the last first, and the error names the member (and
// any teardown that failed too). Nil members are skipped: the first run reports them.
func setUp(ctx context.Context, what string, specs []*troupe.AgentSpec) error {
	for i, s := range specs {
		if s == nil {
			continue
		}
		su, ok := s.Agent.(troupe.Setupper)
		if !ok {
			continue
		}
		if err := troupe.CallSafely(func() error { return su.Setup(ctx) }); err != nil {
			err = fmt.Errorf("flow: %s: setup of %s: %w", what, s.Name, err)
			return errors.Join(err, tearDown(ctx, what, specs[:i]))
		}
	}
	return nil
}

// tearDown calls Teardown, last member first, on every member that has both Setup and
// Teardown, and joins the errors; one member's failure does not keep the others up.
func tearDown(ctx context.Context, what string, specs []*troupe.AgentSpec) error {
	var errs []error
	for i := len(specs) - 1; i >= 0; i-- {
		s := specs[i]
		if s == nil {
			continue
		}
		if _, ok := s.Agent.(troupe.Setupper); !ok {
			continue
		}
		td, ok := s.Agent.(troupe.Teardowner)
		if !ok {
			continue
		}
		if err := troupe.CallSafely(func() error { return td.Teardown(ctx) }); err != nil {
			errs = append(errs, fmt.Errorf("flow: %s: teardown of %s: %w", what, s.Name, err))
		}
	}
	return errors.Join(errs...)
}
