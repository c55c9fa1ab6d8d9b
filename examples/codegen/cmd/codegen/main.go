// Command codegen runs seed 002's code generation example against the OpenAI-compatible
// endpoint OPENAI_BASE_URL names (model OPENAI_MODEL, key OPENAI_API_KEY):
//
//	codegen [-vote] [-cassette FILE] TASK…
//
// Without -vote it runs analyzer → generator → reviewer and prints the specification, the
// code and the review; with -vote three implementers write the code and the normalized
// majority wins. -cassette records the HTTP exchanges to FILE, or replays them from it, as
// TROUPE_CASSETTE says (record, replay, auto; empty means replay).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/examples/codegen"
	"github.com/troupehq/troupe/flow"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("codegen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vote := fs.Bool("vote", false, "three implementers and a majority vote instead of analyzer → generator → reviewer")
	tape := fs.String("cassette", "", "record or replay the HTTP exchanges in this file (mode from TROUPE_CASSETTE)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: codegen [-vote] [-cassette FILE] TASK…")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // asked for, not a usage error: cmd/troupe's convention, and flag.ExitOnError's
			return 0
		}
		return 2
	}
	task := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if task == "" {
		fmt.Fprintln(stderr, "codegen: give the task as arguments, e.g. codegen 'Write a Go function Sum(xs []int) int'")
		return 2
	}
	cfg := codegen.Env(getenv)
	var c *cassette.Cassette
	if *tape != "" {
		mode, err := cassette.ParseMode(getenv("TROUPE_CASSETTE"))
		if err != nil {
			fmt.Fprintln(stderr, "codegen: TROUPE_CASSETTE:", err)
			return 2
		}
		if c, err = codegen.OpenCassette(*tape, mode); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		cfg.HTTPClient = c.Client()
	}
	var err error
	if *vote {
		err = printVote(ctx, cfg, task, stdout)
	} else {
		err = printReview(ctx, cfg, task, stdout)
	}
	if c != nil {
		err = errors.Join(err, c.Save())
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func printReview(ctx context.Context, cfg codegen.Config, task string, w io.Writer) error {
	r, err := codegen.Review(ctx, cfg, task)
	if r == nil {
		return err
	}
	if r.Analysis != nil {
		spec, _ := json.MarshalIndent(r.Analysis, "", "  ")
		fmt.Fprintf(w, "== specification (analyzer)\n%s\n", spec)
	}
	if r.Code != "" {
		fmt.Fprintf(w, "== code (generator)\n%s\n", strings.TrimRight(r.Code, "\n"))
	}
	if r.Verdict != "" {
		fmt.Fprintf(w, "== review (reviewer): %s\n%s\n", r.Verdict, r.Summary)
		for _, is := range r.Issues {
			fmt.Fprintf(w, "- %s\n", is)
		}
	}
	fmt.Fprintf(w, "== %d tokens, $%.4f\n", r.TokensUsed, r.CostDollars)
	return err
}

func printVote(ctx context.Context, cfg codegen.Config, task string, w io.Writer) error {
	v, err := codegen.Vote(ctx, cfg, task)
	if v == nil {
		return err
	}
	for _, name := range codegen.Implementers {
		if f, ok := v.Failed[name]; ok {
			fmt.Fprintf(w, "== %s failed: %s\n", name, f)
		}
	}
	if v.Tally != nil {
		answers := make([]string, 0, len(v.Tally.Counts))
		for a := range v.Tally.Counts {
			answers = append(answers, a)
		}
		// Most votes first; equal counts in the order of their first voter.
		slices.SortFunc(answers, func(a, b string) int {
			if d := v.Tally.Counts[b] - v.Tally.Counts[a]; d != 0 {
				return d
			}
			return strings.Compare(v.Tally.Voters[a][0], v.Tally.Voters[b][0])
		})
		for i, a := range answers {
			voters := v.Tally.Voters[a]
			fmt.Fprintf(w, "== answer %d: %d vote(s) from %s\n", i+1, v.Tally.Counts[a], strings.Join(voters, ", "))
			if v.Winner == "" && len(voters) > 0 {
				// No majority: the choice is the user's, so show each candidate as written.
				fmt.Fprintf(w, "%s\n", strings.TrimRight(v.Code[voters[0]], "\n"))
			}
		}
	}
	if v.Winner != "" {
		fmt.Fprintf(w, "== winner\n%s\n", strings.TrimRight(v.Winner, "\n"))
	}
	fmt.Fprintf(w, "== %d tokens, $%.4f\n", v.TokensUsed, v.CostDollars)
	if tie := (*flow.TieError)(nil); errors.As(err, &tie) {
		// Every tied implementation is printed above; the error only counts them.
		return fmt.Errorf("codegen: %s: no majority — %d answers tied with %d vote(s) each", flow.CodeVoteTie, len(tie.Vote.Tied), tie.Vote.Counts[tie.Vote.Tied[0]])
	}
	return err
}
