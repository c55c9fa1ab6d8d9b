// Command llmjudge asks the feasibility system, with LLM judges, about a proposal, against the
// OpenAI-compatible endpoint OPENAI_BASE_URL names (model OPENAI_MODEL, key OPENAI_API_KEY):
//
//	llmjudge [-k 3] [-temperature 0.7] [-cassette FILE] CASE
//
// CASE is one of the shipped cases (crm-rollout, warehouse-expansion, lab-platform). It
// prints the orchestrator's decision and justification, then the bundle's consensus and
// disagreements. -cassette records the HTTP exchanges to FILE or replays them from it, as
// TROUPE_CASSETTE says (record, replay, auto; empty means replay).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/agent/llmagent"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/feasibility"
	"github.com/troupehq/troupe/examples/feasibility/llmjudge"
	"github.com/troupehq/troupe/troupetest"
)

func main() {
	os.Exit(func() int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop() // before os.Exit, which runs no deferred calls
		return run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	}())
}

// options are the command line's.
type options struct {
	k           int
	temperature float64
	cassette    string
	caseID      string
}

// parse parses the command line; ok is false when the command is over, help says it showed
// the help that was asked for (exit 0) rather than a usage error (exit 2).
func parse(args []string, stderr io.Writer) (o options, help, ok bool) {
	fs := flag.NewFlagSet("llmjudge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.k, "k", 3, "most judges to run (2 to 32)")
	fs.Float64Var(&o.temperature, "temperature", 0.7, "sampling temperature: judges differ by their seeds only when it is above 0")
	fs.StringVar(&o.cassette, "cassette", "", "record or replay the HTTP exchanges in this file (mode from TROUPE_CASSETTE)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmjudge [-k 3] [-temperature 0.7] [-cassette FILE] CASE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, errors.Is(err, flag.ErrHelp), false
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "llmjudge: give one case: crm-rollout, warehouse-expansion or lab-platform")
		return o, false, false
	}
	o.caseID = fs.Arg(0)
	return o, false, true
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, help, ok := parse(args, stderr)
	switch {
	case help:
		return 0
	case !ok:
		return 2
	}
	cfg := llmjudge.Config{LLM: llmagent.Config{BaseURL: getenv("OPENAI_BASE_URL"), Model: getenv("OPENAI_MODEL"), Temperature: &o.temperature},
		Feasibility: feasibility.Config{K: o.k}}
	save := func() error { return nil }
	if o.cassette != "" {
		mode, err := cassette.ParseMode(getenv("TROUPE_CASSETTE"))
		if err != nil {
			fmt.Fprintln(stderr, "llmjudge: TROUPE_CASSETTE:", err)
			return 2
		}
		c, err := cassette.New(o.cassette, cassette.Config{Mode: mode})
		if err != nil {
			fmt.Fprintln(stderr, "llmjudge:", err)
			return 1
		}
		cfg.LLM.HTTPClient, save = c.Client(), c.Save
	}
	if err := errors.Join(judge(ctx, cfg, o.caseID, stdout), save()); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func judge(ctx context.Context, cfg llmjudge.Config, caseID string, w io.Writer) error {
	reg, err := llmjudge.Registry(nil, cfg)
	if err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Registry: reg})
	if err != nil {
		return err
	}
	evs, err := troupetest.Collect(eng.Run(ctx, troupe.Request{Query: "is " + caseID + " feasible?", ParsedQuery: map[string]any{"case": caseID}}))
	if err != nil {
		return err
	}
	var out []string
	for _, ev := range evs {
		switch ev.Kind {
		case troupe.KindDispatchCompleted:
			r := ev.Data.(*troupe.Result)
			switch r.AgentName {
			case feasibility.OrchestratorAgent:
				out = append(out, fmt.Sprintf("== decision: %v (%v, confidence %.2f)\n%s", r.AgentResult["decision"], r.AgentResult["votes"], *r.Confidence, r.Summary()))
			case feasibility.BundleAgent:
				s, _ := r.AgentResult["summary"].(map[string]any)
				out = append(out, fmt.Sprintf("== bundle: %s\nconsensus: %v", r.Summary(), s["consensus"]))
			}
		case troupe.KindDispatchFailed:
			r := ev.Data.(*troupe.Result)
			return fmt.Errorf("llmjudge: %s failed: %v", r.AgentName, r.Errors)
		}
	}
	if len(out) == 0 {
		return fmt.Errorf("llmjudge: the run ended %s", troupetest.Last(evs).Kind)
	}
	for _, s := range out {
		fmt.Fprintln(w, s)
	}
	return nil
}
