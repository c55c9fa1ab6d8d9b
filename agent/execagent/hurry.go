package execagent

import (
	"context"
	"reflect"
	"syscall"
)

// hurryKey is the context key of the hurry channels; hurries is its value.
type hurryKey struct{}

// hurries is a context's hurry channels, innermost first.
type hurries struct {
	ch    <-chan struct{}
	outer *hurries
}

// WithHurry returns a copy of ctx carrying hurry. Closing hurry ends at once the kill grace of
// every agent run under the returned context (directly, or in a run of the engine, whose
// dispatches carry its caller's values): a process group that was sent SIGTERM, or is sent it
// later, gets SIGKILL without waiting for Config.KillGrace. Closing it stops nothing by itself:
// an agent whose context is not done runs on. A hurry channel of an outer WithHurry keeps
// working under an inner one; a nil hurry returns ctx.
//
// It is what lets a CLI make a second Ctrl-C kill its agents rather than itself, which would
// leave their process groups running. The context is safe for concurrent use, as every context.
func WithHurry(ctx context.Context, hurry <-chan struct{}) context.Context {
	if hurry == nil {
		return ctx
	}
	outer, _ := ctx.Value(hurryKey{}).(*hurries)
	return context.WithValue(ctx, hurryKey{}, &hurries{ch: hurry, outer: outer})
}

// killOnHurry SIGKILLs the process group pgid once ctx is done and a hurry channel of ctx is
// closed, in whichever order. The returned func, called when the process has been waited for,
// ends the watch and waits for its goroutine. A context without hurry channels costs nothing.
func killOnHurry(ctx context.Context, pgid int) (stop func()) {
	h, _ := ctx.Value(hurryKey{}).(*hurries)
	if h == nil {
		return func() {}
	}
	exited, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
		case <-exited:
			return
		}
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(exited)}}
		for ; h != nil; h = h.outer {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.ch)})
		}
		if i, _, _ := reflect.Select(cases); i > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	return func() {
		close(exited)
		<-finished
	}
}
