package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
)

// runRun is `troupe run CONFIG "query"`: it builds the workflow's agents, runs the query and
// shows the run as it goes — live on a terminal, plain lines elsewhere, or, with --output
// json, the full run record at the end.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWorkflow(ctx, args, stdout, stderr, isTerminal(stdout))
}

// runWorkflow is runRun with the terminal test injected, so that tests can draw the live
// view into a buffer.
func runWorkflow(ctx context.Context, args []string, stdout, stderr io.Writer, term bool) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	output := fs.String("output", "text", "text or json")
	input := fs.String("input", "", "read the request from a JSON `FILE`")
	seed := fs.Uint64("seed", 0, "seed of the run (0 picks one)")
	state := stateFlag{}
	fs.Var(state, "state", "session state `key=value` (repeatable)")
	words, code, done := parseCommand("run", fs, args, 1, -1, `CONFIG and a query, as in: troupe run examples/e2i "What caused the drop in NRx for Kisqali in Midwest?"`, stdout, stderr)
	if done {
		return code
	}
	if !needQuery("run", words, *input, stderr) {
		return exitUsage
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "troupe run: --output %q: want text or json\n", *output)
		return exitUsage
	}
	f, ok := loadConfig("run", words[0], stderr)
	if !ok {
		return exitUsage
	}
	req, err := request(f, strings.Join(words[1:], " "), *input, state, *seed)
	if err != nil {
		fmt.Fprintf(stderr, "troupe run: %v\n", err)
		return exitUsage
	}
	printWarnings(stderr, f) // before the run, whose live view may take the terminal
	b, err := builtins()
	if err != nil {
		fmt.Fprintf(stderr, "troupe run: %v\n", err)
		return exitFailed
	}
	servers := newMCPServers()
	defer servers.Close() // after the engine's Close, deferred below: no agent calls a tool then
	reg, err := config.Build(ctx, f, config.Options{Builtins: b, Factories: factories(servers)})
	if err != nil {
		fmt.Fprintf(stderr, "troupe run: %v\n", err)
		return exitUsage
	}
	eng, err := engine.New(engineConfig(f, reg))
	if err != nil {
		fmt.Fprintf(stderr, "troupe run: %v\n", err)
		return exitUsage
	}
	defer func() {
		// The run has ended by now; Close only waits for agents that ignored cancellation.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = eng.Close(cctx)
	}()

	var out runOutput
	if *output == "json" {
		out = newRecorder(stdout, f, req)
	} else {
		out = newProgress(stdout, f, req, term, time.Now)
	}
	defer out.close()
	var outcome *troupe.Outcome
	for ev, err := range eng.Run(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				// The stream may end on the caller's cancellation before the run's own
				// run_cancelled event reaches it; the run is cancelled all the same.
				return out.end(&troupe.Outcome{Status: troupe.RunCancelled, Error: &troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: context.Cause(ctx).Error()}}, exitCancelled)
			}
			fmt.Fprintf(stderr, "troupe run: %v\n", err)
			return exitFailed
		}
		out.event(ev)
		if o, ok := ev.Data.(*troupe.Outcome); ok && (ev.Stage.Terminal() || ev.Kind == troupe.KindRunPaused) {
			outcome = o
		}
	}
	if outcome == nil {
		if ctx.Err() != nil {
			return out.end(&troupe.Outcome{Status: troupe.RunCancelled, Error: &troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: context.Cause(ctx).Error()}}, exitCancelled)
		}
		fmt.Fprintln(stderr, "troupe run: the run ended without a terminal event")
		return exitFailed
	}
	return out.end(outcome, exitCode(outcome.Status))
}

// runOutput shows a run: each event as it is recorded, then the end. end returns the exit
// code, which it may change if it cannot write.
type runOutput interface {
	event(ev troupe.Event)
	end(o *troupe.Outcome, code int) int
	close()
}

// isTerminal reports whether w is a terminal that can draw the live view: a terminal device
// (not any character device: /dev/null is one) whose TERM is not "dumb", as Emacs's shell
// and some CI runners set it to say that cursor movement is not understood.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("TERM") != "dumb" && terminal(f)
}
