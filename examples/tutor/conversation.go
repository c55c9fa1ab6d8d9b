package tutor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/troupehq/troupe"
)

// ConverseConfig configures Converse.
type ConverseConfig struct {
	// Session configures the session; its Human is replaced by the conversation's reader.
	Session SessionConfig
	// Echo prints each line read after its prompt, as a transcript of a scripted conversation
	// reads; a terminal echoes by itself.
	Echo bool
	// Prompt is printed before each message; "" means "> ".
	Prompt string
}

// Converse holds a conversation over in and out: each line of in is a message to the tutor,
// except a line read while a question is open (a quiz or diagnostic question), which answers
// it — so a terminal and a script file read the same way. Blank lines and lines starting with
// '#' are skipped. A line "/master TOPIC" runs Session.Master on the topic instead of sending
// a message. At the end of in, an open question is answered "pause", so a quiz keeps its
// place, and Converse returns nil. It returns the session's final state.
func Converse(ctx context.Context, cfg ConverseConfig, in io.Reader, out io.Writer) (map[string]any, error) {
	sc := bufio.NewScanner(in)
	prompt := cfg.Prompt
	if prompt == "" {
		prompt = "> "
	}
	next := func(p string) (string, bool) {
		fmt.Fprint(out, p)
		for {
			if !sc.Scan() {
				fmt.Fprintln(out)
				return "", false
			}
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if cfg.Echo {
				fmt.Fprintln(out, line)
			}
			return line, true
		}
	}
	sc2 := cfg.Session
	sc2.Human = troupe.HumanFunc(func(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
		if err := ctx.Err(); err != nil {
			return troupe.Answer{}, err
		}
		fmt.Fprintln(out, q.Prompt)
		line, ok := next("  answer: ")
		if !ok {
			line = "pause" // the learner left; keep the quiz's place
		}
		return troupe.Answer{QuestionID: q.ID, Text: line}, nil
	})
	s, err := NewSession(sc2)
	if err != nil {
		return nil, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	for {
		msg, ok := next(prompt)
		if !ok {
			break
		}
		if topic, ok := strings.CutPrefix(msg, "/master"); ok {
			// Not a message for the coordinator: run seed 003's MasteryLoop on a topic.
			out2, err := s.Master(ctx, strings.TrimSpace(topic))
			if err != nil {
				if ctx.Err() != nil {
					return s.State(), err
				}
				fmt.Fprintln(out, err)
				continue
			}
			fmt.Fprintf(out, "[mastery_loop ← /master]\n%s\n", out2.Text)
			continue
		}
		r, err := s.Send(ctx, msg)
		if err != nil {
			return s.State(), err
		}
		for _, t := range r.Turns {
			fmt.Fprintf(out, "[%s ← %s]\n%s\n", t.Agent, t.Reason, t.Text)
		}
	}
	if err := sc.Err(); err != nil {
		return s.State(), fmt.Errorf("tutor: reading the conversation: %w", err)
	}
	return s.State(), nil
}
