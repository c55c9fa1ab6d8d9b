package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGHUP too: a closing terminal must stop the agents as Ctrl-C does, since they run in
	// process groups of their own that the hangup does not reach.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// The first Ctrl-C cancels the run, which then ends cleanly and shows what had finished;
	// once it has been caught, the signals' default comes back, so a second Ctrl-C stops a
	// run that will not end.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
