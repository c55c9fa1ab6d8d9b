package local_test

import (
	"context"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/executor/local"
)

// The executor tells the engine of its caller's context's end: f runs once it is done, and a
// stopped registration never runs.
func TestAfterFunc(t *testing.T) {
	var w troupe.Watcher = local.New(local.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	w.AfterFunc(ctx, func() { close(ran) })
	stopped, cancel2 := context.WithCancel(t.Context())
	stop := w.AfterFunc(stopped, func() { t.Error("a stopped AfterFunc ran") })
	if !stop() {
		t.Error("stop before the context's end reported false")
	}
	cancel2()
	cancel()
	<-ran
}
