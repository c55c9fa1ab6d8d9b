package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/troupehq/troupe/agent/execagent"
)

func main() {
	// SIGHUP too: a closing terminal must stop the agents as Ctrl-C does, since they run in
	// process groups of their own that the hangup does not reach. But not under nohup: a
	// handler would undo the ignore troupe was started with, and the hangup nohup is there to
	// survive would cancel the run.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, sigs...)
	hurry := make(chan struct{})
	ctx, cancel := context.WithCancelCause(execagent.WithHurry(context.Background(), hurry))
	done, handled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(handled)
		interrupts(caught, done, cancel, hurry)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	close(done)
	<-handled
	signal.Stop(caught)
	cancel(nil)
	os.Exit(code)
}

// interrupts acts on the signals troupe catches until done is closed. The first cancels the
// run, which then ends cleanly and shows what had finished. The second ends the kill grace of
// the exec agents (it closes hurry): they are SIGKILLed at once, where troupe's death would
// leave their process groups running, and the run ends as a cancelled one. It also brings back
// the signals' default, so that a third stops a run that still will not end.
func interrupts(caught chan os.Signal, done <-chan struct{}, cancel context.CancelCauseFunc, hurry chan<- struct{}) {
	select {
	case <-done:
		return
	case s := <-caught:
		cancel(errors.New(s.String() + " signal received")) // the cause signal.NotifyContext gives
	}
	select {
	case <-done:
		return
	case <-caught:
		close(hurry)
		signal.Stop(caught)
	}
}
