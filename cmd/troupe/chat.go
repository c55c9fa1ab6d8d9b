package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/examples/tutor"
	"github.com/troupehq/troupe/route"
)

// chatExample is the example that holds a conversation.
const chatExample = "examples/tutor"

// runChat is `troupe chat`: a conversation with a conversational example on the terminal.
func runChat(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return chat(ctx, args, os.Stdin, stdout, stderr)
}

// chat holds the conversation over stdin, or over the lines of --script, printing the replies
// to stdout. Each line is a message, except a line read while a question is open (a quiz),
// which answers it.
func chat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	script := fs.String("script", "", "replay the conversation in `FILE` (one learner line a line, # comments) instead of reading the terminal")
	seed := fs.Uint64("seed", 1, "seed of the session: which quiz questions are drawn")
	questions := fs.Int("questions", 5, "questions per quiz")
	words, code, done := parseCommand("chat", fs, args, 1, 1, "one example directory, as in 'troupe chat examples/tutor'", stdout, stderr)
	if done {
		return code
	}
	// The tutor's quiz draws its questions from a topic's own, so a quiz cannot be longer
	// than the topic with the fewest; the tutor would cut it short without saying so.
	if most := maxQuizQuestions(); *questions < 1 || *questions > most {
		fmt.Fprintf(stderr, "troupe chat: --questions %d: want 1 to %d, the questions the tutor has on every topic\n", *questions, most)
		return exitUsage
	}
	dir := words[0]
	// The file's coordinator and error policy drive the conversation, so editing the table in
	// troupe.yaml changes how messages are routed; its agents are the tutor's Go agents.
	f, err := config.Load(dir)
	if err != nil {
		report(stderr, "chat", err)
		return exitUsage
	}
	rules := f.RouteRules()
	if rules == nil {
		fmt.Fprintf(stderr, "troupe chat: %s has no coordinator section, so it routes no conversation; try %s\n", dir, chatExample)
		return exitUsage
	}
	policy := f.Policy()
	cfg := tutor.ConverseConfig{Session: tutor.SessionConfig{Seed: *seed, Specialists: tutor.Config{NumQuestions: *questions},
		Coordinator: rules, Policy: &policy}}
	// Checked before anything is printed: the file's table must route among the tutor's
	// agents, whatever agents the file itself declares.
	check, err := tutor.NewSession(cfg.Session)
	if err != nil {
		if foreign := foreignTargets(rules); len(foreign) > 0 {
			fmt.Fprintf(stderr, `troupe chat: %s: its coordinator routes to %s, which chat does not have.
Chat talks to seed 003's tutor: the coordinator must route among the tutor's agents (%s), as %s/troupe.yaml does.
To see where this file routes a message, or to run it: troupe plan %s "message", troupe run %s "message".
`, dir, strings.Join(foreign, ", "), strings.Join(tutorAgents(), ", "), chatExample, dir, dir)
		} else {
			fmt.Fprintf(stderr, "troupe chat: %s: %v\n", dir, err)
		}
		return exitUsage
	}
	check.Close(ctx)
	in := stdin
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			fmt.Fprintf(stderr, "troupe chat: --script: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in, cfg.Echo = f, true
	} else {
		fmt.Fprintln(stdout, `Chatting with the tutor (seed 003). Try "teach me fractions", "explain why", "quiz me", "what's next"; answer "pause" to pause a quiz, "continue quiz" to resume it; "/master fractions" runs the mastery loop. End with Ctrl-D.`)
	}
	if _, err := tutor.Converse(ctx, cfg, in, stdout); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "troupe chat: cancelled")
			return exitCancelled
		}
		report(stderr, "chat", err)
		return exitFailed
	}
	return exitOK
}

// tutorAgents are the agents chat runs, whatever the file declares.
func tutorAgents() []string {
	reg, err := tutor.Registry(tutor.NewSpecialists(nil, tutor.Config{}))
	if err != nil {
		return tutor.Agents()
	}
	return reg.Names()
}

// foreignTargets lists, sorted, the agents rules may route to that the tutor does not have.
func foreignTargets(rules *route.Rules) []string {
	have := tutorAgents()
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if n != "" && !slices.Contains(have, n) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, t := range rules.Triggers {
		add(t.Target)
	}
	for _, cands := range rules.Intents {
		add(cands...)
	}
	for _, cands := range rules.KPIMap {
		add(cands...)
	}
	for from, to := range rules.Fallbacks {
		add(from, to)
	}
	add(rules.Default)
	slices.Sort(out)
	return out
}

// maxQuizQuestions is the longest quiz the tutor can give on every topic of its corpus.
func maxQuizQuestions() int {
	most := 0
	for i, k := range tutor.DefaultCorpus().Concepts {
		if i == 0 || len(k.Questions) < most {
			most = len(k.Questions)
		}
	}
	return most
}

const chatUsage = `Usage: troupe chat [--script FILE] [--seed N] [--questions N] EXAMPLE

Holds a conversation with a conversational example — today seed 003's tutor. Each message is
routed by the coordinator table of EXAMPLE's troupe.yaml (edit it to change the routing) to the
diagnostic, tutor, quiz, feedback or pathplanner agent — the tutor's own Go agents, so the
table may route only among them; troupe plan and troupe run route a message of any other
coordinator file. The session state (current topic, paused quiz, mastery, last agent) is
carried from message to message. When the tutor asks a question (a quiz, the diagnostic's
quick checks) the next line answers it; answer "pause" to pause a quiz and say "continue
quiz" later to resume it. "/master TOPIC" runs seed 003's MasteryLoop (tutor → quiz →
feedback until mastered, at most 5 cycles) on a topic; answering "pause" to one of its quiz
questions stops the loop, its quiz paused for "continue quiz".

EXAMPLE is a directory holding troupe.yaml, or a workflow file, with a coordinator section.

Flags:
  --script FILE   replay FILE's lines as the learner's (blank lines and # comments skipped)
  --seed N        seed of the session, which draws the quiz questions (default 1)
  --questions N   questions per quiz, 1 to 6 (default 5)
`
