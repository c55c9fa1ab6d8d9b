package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupehq/troupe/executor/executortest"
	"github.com/troupehq/troupe/executor/local"
)

// TestErrOnlyOnceDone: a job's context reports an error only once its Done channel is closed,
// as context.Context promises ("If Done is not yet closed, Err returns nil"); a job that polls
// Err and then selects on Done must never find Err set and Done open. The scope's context is
// cancelled while the job polls, which is when the two could disagree.
func TestErrOnlyOnceDone(t *testing.T) {
	e := local.New(local.Config{CancelGrace: grace})
	for range 200 {
		ctx, cancel := context.WithCancel(t.Context())
		s := e.Scope(ctx)
		started := make(chan struct{})
		open := make(chan bool, 1)
		s.Go(&executortest.JobFuncs{RunFunc: func(jctx context.Context) {
			_ = jctx.Done() // the channel is made before the cancel, as an agent's select would
			close(started)
			for jctx.Err() == nil {
			}
			select {
			case <-jctx.Done():
				open <- false
			default:
				open <- true
			}
		}}, 0, time.Now().Add(time.Hour))
		<-started
		cancel()
		executortest.Wait(t, s)
		if <-open {
			t.Fatal("the job's context reported an error while its Done channel was still open")
		}
	}
	drain(t, e)
}
