package troupe

import (
	"context"
	"time"
)

// Store keeps run logs. The engine appends every event before it acts on it — one Append per
// state transition, carrying that transition's events — and watching, resuming and replaying a
// run are reads of its log. Implementations must be safe for concurrent use.
//
// Append appends all of events or none of them, and must not keep the slice (the engine reuses
// it). Each event's Seq must be one more than the last of its run, the first being 1; otherwise
// Append fails with ErrSeqConflict, so two writers can never interleave one log. Events returns
// the events of runID with Seq > after, in order; the returned slice and payloads must not be
// modified by the caller. A store that does not know runID returns ErrRunNotFound.
type Store interface {
	Append(ctx context.Context, events ...Event) error
	Events(ctx context.Context, runID string, after int64) ([]Event, error)
}

// Executor is where a run's work runs and where its time and entropy come from: goroutines in
// one process, or a durable workflow engine. The engine never starts a goroutine, reads the
// clock or draws randomness except through an Executor. Implementations are safe for
// concurrent use.
type Executor interface {
	// Now is the executor's clock.
	Now() time.Time
	// Seed returns fresh entropy for a run that was not given a seed.
	Seed() uint64
	// Scope returns the owner of one run's jobs; cancelling ctx cancels every job of it.
	Scope(ctx context.Context) Scope
}

// Watcher is an Executor that tells the engine when a context it did not make ends (the
// caller's context of a run), so the engine need not start anything to learn of it. AfterFunc
// arranges for f to run once ctx is done, at once if it already is, on a goroutine the
// executor answers for; stop undoes that if f has not started and reports whether it did, as
// context.AfterFunc's stop. With an executor that is not a Watcher, a run whose caller can
// cancel it holds a job of its scope that waits for the caller's context.
type Watcher interface {
	AfterFunc(ctx context.Context, f func()) (stop func() bool)
}

// Scope runs the jobs of one run.
type Scope interface {
	// Go runs job after delay. Its Run gets a context that is cancelled at deadline (zero: no
	// deadline) or when the scope's context is cancelled. Done is called exactly once: after Run
	// returns, or when the deadline passes first (expired = true); Run may then still be running
	// but its outcome must be ignored. A deadline that passes while the job waits out its delay
	// has passed first: the job expires without running. Done may call Go.
	Go(job Job, delay time.Duration, deadline time.Time)
	// Wait returns once every job's Done has been called and every Run that has not expired has
	// returned.
	Wait()
}

// Job is one unit of work handed to a Scope.
type Job interface {
	Run(ctx context.Context)
	Done(expired bool)
}
