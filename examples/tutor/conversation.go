package tutor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

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
// place and a diagnostic's quick check stops ungraded, and Converse returns nil. It returns
// the session's final state.
func Converse(ctx context.Context, cfg ConverseConfig, in io.Reader, out io.Writer) (state map[string]any, err error) {
	prompt := cfg.Prompt
	if prompt == "" {
		prompt = "> "
	}
	// Lines are read on their own goroutine so that cancelling ctx (Ctrl-C) ends a wait for
	// the learner: a Read on a terminal cannot be interrupted. Converse waits for the reader
	// unless ctx was cancelled while it blocked; then it ends with its Read, at the next line
	// or when the process exits.
	lines := make(chan string)
	done := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
		readErr = sc.Err()
	}()
	defer func() {
		close(done)
		if ctx.Err() == nil {
			wg.Wait()
			if readErr != nil && err == nil {
				err = fmt.Errorf("tutor: reading the conversation: %w", readErr)
			}
		}
	}()
	next := func(ctx context.Context, p string) (string, bool) {
		fmt.Fprint(out, p)
		for {
			var line string
			var ok bool
			select {
			case line, ok = <-lines:
			case <-ctx.Done():
				return "", false
			}
			if !ok {
				fmt.Fprintln(out)
				return "", false
			}
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !utf8.ValidString(line) {
				// Read on, it would reach the tutor with U+FFFD for the byte: said, and
				// skipped, so that the learner types it again.
				at := firstInvalid(line)
				fmt.Fprintf(out, "(not read: byte %d, 0x%02x, is not UTF-8 text; type the line again)\n", at+1, line[at])
				fmt.Fprint(out, p)
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
		line, ok := next(ctx, "  answer: ")
		if err := ctx.Err(); err != nil {
			return troupe.Answer{}, err
		}
		if !ok {
			line = "pause" // the learner left; keep the quiz's place
		}
		return troupe.Answer{QuestionID: q.ID, Text: line}, nil
	})
	// Each decision is printed as it is made, before the agent's questions: "[quiz ← …]", and
	// "[diagnostic ← fallback for quiz, which failed: …]" when a fallback takes over.
	sc2.Routed = func(r Route) { fmt.Fprintf(out, "[%s ← %s]\n", r.Agent, r.Reason) }
	sc2.Replied = func(t Turn) { fmt.Fprintln(out, t.Text) } // each turn as it finishes
	s, err := NewSession(sc2)
	if err != nil {
		return nil, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	for {
		msg, ok := next(ctx, prompt)
		if err := ctx.Err(); err != nil {
			return s.State(), err
		}
		if !ok {
			break
		}
		if topic, ok := strings.CutPrefix(msg, "/master"); ok && (topic == "" || topic[0] == ' ' || topic[0] == '\t') {
			// Not a message for the coordinator: run seed 003's MasteryLoop on a topic.
			topic = strings.TrimSpace(topic)
			if topic == "" {
				var topics []string
				for _, k := range s.Corpus().Concepts {
					topics = append(topics, k.ID)
				}
				fmt.Fprintf(out, "Usage: /master TOPIC runs the mastery loop on a topic: %s.\n", strings.Join(topics, ", "))
				continue
			}
			out2, err := s.Master(ctx, topic)
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
		if _, err := s.Send(ctx, msg); err != nil {
			return s.State(), err
		}
	}
	return s.State(), nil
}

// firstInvalid is the index of the first byte of s that is not part of valid UTF-8, or len(s).
func firstInvalid(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(s)
}
