package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
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
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	// The first Ctrl-C cancels the run, which then ends cleanly and shows what had finished;
	// once it has been caught, the signals' default comes back, so a second Ctrl-C stops a
	// run that will not end.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
