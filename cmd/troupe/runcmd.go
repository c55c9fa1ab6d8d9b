package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
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
	// The flag's value first: a flag before CONFIG that was given none takes CONFIG as it
	// (--output examples/e2i "q"), and its value names what it swallowed where "want a query
	// after CONFIG" would not.
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "troupe run: --output %q: want text or json\n", *output)
		return exitUsage
	}
	if !needQuery("run", words, *input, stderr) {
		return exitUsage
	}
	f, ok := loadConfig("run", words[0], stderr)
	if !ok {
		return exitUsage
	}
	req, in, err := request(f, strings.Join(words[1:], " "), *input, state, *seed)
	if err != nil {
		report(stderr, "run", err)
		return exitUsage
	}
	printWarnings(stderr, f) // before the run, whose live view may take the terminal
	b, err := builtins()
	if err != nil {
		report(stderr, "run", err)
		return exitFailed
	}
	servers := newMCPServers()
	defer servers.Close() // after the engine's Close, deferred below: no agent calls a tool then
	reg, err := config.Build(ctx, f, config.Options{Builtins: b, Factories: factories(servers)})
	if err != nil {
		if buildCancelled(ctx, "run", stderr) {
			return exitCancelled
		}
		report(stderr, "run", err)
		return exitUsage
	}
	eng, err := engine.New(engineConfig(f, reg))
	if err != nil {
		report(stderr, "run", err)
		return exitUsage
	}
	defer func() {
		// The run has ended by now; Close only waits for agents that ignored cancellation.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = eng.Close(cctx)
	}()
	if in != nil {
		// A parsed query from --input that planning refuses for a value of the wrong type is a
		// mistake in the file, as a request field of the wrong type is: say so in the file's
		// terms before running. Other refusals are the run's to report.
		if _, err := eng.Plan(req); err != nil { // planning alone: the run routes, as it plans, again
			if perr := in.refused(err, req.ParsedQuery); perr != nil {
				report(stderr, "run", perr)
				return exitUsage
			}
		}
	}

	var out runOutput
	if *output == "json" {
		out = newRecorder(stdout, f, req)
	} else {
		out = newProgress(stdout, f, req, term, time.Now)
	}
	defer out.close()
	return show(ctx, eng.Run(ctx, req), out, stderr)
}

// show passes a run's events to out and ends it, returning the exit code. A stream that ends
// in an error, or without a terminal event, ends the run record all the same (failed), since
// it is the output a program reads; docs/run-record.md says its run_id is empty only when
// nothing was recorded.
func show(ctx context.Context, events iter.Seq2[troupe.Event, error], out runOutput, stderr io.Writer) int {
	cancelled := func() int {
		return out.end(&troupe.Outcome{Status: troupe.RunCancelled, Error: &troupe.ErrorInfo{Code: troupe.CodeCancelled, Message: context.Cause(ctx).Error()}}, exitCancelled)
	}
	failed := func(err error) int {
		report(stderr, "run", err)
		if _, ok := out.(*recorder); ok {
			return out.end(&troupe.Outcome{Status: troupe.RunFailed, Error: runError(err)}, exitFailed)
		}
		return exitFailed // the reason is on stderr; a status line would only repeat it
	}
	var outcome *troupe.Outcome
	for ev, err := range events {
		if err != nil {
			if ctx.Err() != nil {
				// The stream may end on the caller's cancellation before the run's own
				// run_cancelled event reaches it; the run is cancelled all the same.
				return cancelled()
			}
			return failed(err)
		}
		out.event(ev)
		if o, ok := ev.Data.(*troupe.Outcome); ok && (ev.Stage.Terminal() || ev.Kind == troupe.KindRunPaused) {
			outcome = o
		}
	}
	if outcome == nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return failed(errors.New("the run ended without a terminal event"))
	}
	return out.end(outcome, exitCode(outcome.Status))
}

// runError is an error that ended a run's event stream, as the run record's outcome holds it.
func runError(err error) *troupe.ErrorInfo {
	var oe *troupe.OrchestrationError
	if errors.As(err, &oe) && oe.Stage == troupe.StageInitialize {
		// The engine refused the request at the start, before recording anything.
		return &troupe.ErrorInfo{Code: troupe.CodeInvalidRequest, Message: err.Error()}
	}
	info := troupe.ErrorInfoOf(err)
	return &info
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
