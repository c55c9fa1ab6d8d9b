package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/examples/tutor"
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
	fs.SetOutput(io.Discard)
	script := fs.String("script", "", "replay the conversation in `FILE` (one learner line a line, # comments) instead of reading the terminal")
	seed := fs.Uint64("seed", 1, "seed of the session: which quiz questions are drawn")
	questions := fs.Int("questions", 0, "questions per quiz (0: 5)")
	words, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		chatUsage(stdout)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "troupe chat: %v\nRun 'troupe chat --help' for usage.\n", err)
		return exitUsage
	}
	if len(words) != 1 {
		fmt.Fprintf(stderr, "troupe chat: want one example directory, as in 'troupe chat examples/tutor', got %s\n", count(len(words), "argument"))
		return exitUsage
	}
	dir := words[0]
	// The file's coordinator and error policy drive the conversation, so editing the table in
	// troupe.yaml changes how messages are routed; its agents are the tutor's Go agents.
	f, err := config.Load(dir)
	if err != nil {
		fmt.Fprintf(stderr, "troupe chat: %v\n", err)
		return exitUsage
	}
	rules := f.RouteRules()
	if rules == nil {
		fmt.Fprintf(stderr, "troupe chat: %s has no coordinator section, so it routes no conversation; try %s\n", dir, chatExample)
		return exitUsage
	}
	policy := f.Policy()
	in, echo := stdin, false
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			fmt.Fprintf(stderr, "troupe chat: --script: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in, echo = f, true
	} else {
		fmt.Fprintln(stdout, `Chatting with the tutor (seed 003). Try "teach me fractions", "explain why", "quiz me", "what's next"; answer "pause" to pause a quiz, "continue quiz" to resume it; "/master fractions" runs the mastery loop. End with Ctrl-D.`)
	}
	cfg := tutor.ConverseConfig{Echo: echo, Session: tutor.SessionConfig{Seed: *seed, Specialists: tutor.Config{NumQuestions: *questions},
		Coordinator: rules, Policy: &policy}}
	check, err := tutor.NewSession(cfg.Session) // the file's table must route among the tutor's agents
	if err != nil {
		fmt.Fprintf(stderr, "troupe chat: %s: %v\n", dir, err)
		return exitUsage
	}
	check.Close(ctx)
	if _, err := tutor.Converse(ctx, cfg, in, stdout); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "troupe chat: cancelled")
			return exitCancelled
		}
		fmt.Fprintf(stderr, "troupe chat: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func chatUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: troupe chat [--script FILE] [--seed N] [--questions N] EXAMPLE

Holds a conversation with a conversational example — today seed 003's tutor. Each message is
routed by the coordinator table of EXAMPLE's troupe.yaml (edit it to change the routing) to the
diagnostic, tutor, quiz, feedback or pathplanner agent,
with the session state (current topic, paused quiz, mastery, last agent) carried from message to
message. When the tutor asks a question (a quiz, the diagnostic's quick checks) the next line
answers it; answer "pause" to pause a quiz and say "continue quiz" later to resume it.
"/master TOPIC" runs seed 003's MasteryLoop (tutor → quiz → feedback until mastered, at most 5
cycles) on a topic.

Flags:
  --script FILE   replay FILE's lines as the learner's (blank lines and # comments skipped)
  --seed N        seed of the session, which draws the quiz questions (default 1)
  --questions N   questions per quiz (default 5)

Examples:
  troupe chat examples/tutor
      talk to the tutor on this terminal
  troupe chat --script examples/tutor/testdata/fractions.chat examples/tutor
      replay a scripted conversation: diagnostic, explanation, a paused and resumed quiz, feedback
`)
}
