package stray_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupehq/troupe/internal/stray"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWaitEndsWhenTheLastReturns(t *testing.T) {
	var tr stray.Tracker
	if n, err := tr.Wait(t.Context()); n != 0 || err != nil {
		t.Fatalf("empty tracker: Wait = %d, %v", n, err)
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		tr.Add()
		wg.Go(func() {
			defer tr.Done()
			<-release
		})
	}
	if n := tr.Count(); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("teardown deadline")
	cancel(cause)
	if n, err := tr.Wait(ctx); n != 3 || !errors.Is(err, cause) {
		t.Errorf("Wait with an ended context = %d, %v; want 3 and its cause", n, err)
	}
	close(release)
	ctx, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if n, err := tr.Wait(ctx); n != 0 || err != nil {
		t.Errorf("Wait after all returned = %d, %v", n, err)
	}
	wg.Wait()

	// The tracker is reusable: a new stray makes it busy again.
	tr.Add()
	done := make(chan struct{})
	go func() { defer close(done); tr.Wait(context.Background()) }()
	select {
	case <-done:
		t.Fatal("Wait returned while a goroutine was counted")
	case <-time.After(20 * time.Millisecond):
	}
	tr.Done()
	<-done
}

func TestDoneWithoutAddPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Done without Add did not panic")
		}
	}()
	var tr stray.Tracker
	tr.Done()
}
