package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/examples/e2i"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"golang.org/x/text/width"
)

// defaultQuery is seed 000's example question.
const defaultQuery = "What caused the drop in NRx for Kisqali in Midwest?"

// runDemo runs one question through seed 000's E2I system (examples/e2i): it prints the plan,
// then each event as it is recorded, then the aggregated answer; or, with --json, only the
// events, one JSON object a line.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print each event as a JSON line instead of text")
	seed := fs.Uint64("seed", 0, "seed of the run: fixes its run, trace and dispatch ids (0 picks one)")
	words, code, done := parseCommand("demo", fs, args, 0, -1, "a question", stdout, stderr)
	if done {
		return code
	}
	query := strings.Join(words, " ")
	if where := notUTF8(query); where != "" {
		fmt.Fprintf(stderr, "troupe demo: the question is not UTF-8 text: %s\n", where)
		return exitUsage
	}
	if strings.TrimSpace(query) == "" {
		query = defaultQuery
	}

	reg, err := e2i.Registry()
	if err != nil {
		report(stderr, "demo", err)
		return exitFailed
	}
	eng, err := engine.New(engine.Config{Registry: reg, Planner: e2i.Rules()})
	if err != nil {
		report(stderr, "demo", err)
		return exitFailed
	}
	req := troupe.Request{Query: query, ParsedQuery: e2i.ParseQuery(query), Seed: *seed}

	var out eventWriter
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		out = jsonWriter{enc}
	} else {
		tw := &textWriter{w: stdout}
		tw.header(req, eng)
		out = tw
	}
	var outcome *troupe.Outcome
	for ev, err := range eng.Run(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				// The stream may end on the caller's cancellation before the run's own
				// run_cancelled event reaches it; the run is cancelled all the same.
				out.cancelled(context.Cause(ctx))
				return exitCancelled
			}
			report(stderr, "demo", err)
			return exitFailed
		}
		if err := out.event(ev); err != nil {
			report(stderr, "demo", err)
			return exitFailed
		}
		if o, ok := ev.Data.(*troupe.Outcome); ok && (ev.Stage.Terminal() || ev.Kind == troupe.KindRunPaused) {
			outcome = o
		}
	}
	if outcome == nil {
		fmt.Fprintln(stderr, "troupe demo: the run ended without a terminal event")
		return exitFailed
	}
	code = exitCode(outcome.Status)
	out.end(outcome, code)
	return code
}

// exitCode maps a run's final status to the process's exit code.
func exitCode(s troupe.RunStatus) int {
	switch s {
	case troupe.RunCompleted:
		return exitOK
	case troupe.RunPaused:
		return exitPaused
	case troupe.RunCancelled:
		return exitCancelled
	}
	return exitFailed
}

const demoUsage = `Usage: troupe demo [--json] [--seed N] [question...]

Runs a question through seed 000's E2I causal analytics system: 17 agents over a synthetic
prescription dataset in which a Midwest access restriction cut Kisqali NRx by about 12%
from week 18. The question defaults to seed 000's own:

  ` + defaultQuery + `

Any other question is parsed by the example's keyword parser (intent, brands, KPIs,
regions, time period) and planned by seed 000's routing rules. troupe demo prints the plan,
then each event of the run as it is recorded, then the aggregated answer.

Flags:
  --json      print each event as a JSON line instead of text
  --seed N    seed of the run: fixes its run, trace and dispatch ids (0 picks one)

Flags may come before or after the question; after -- every argument is part of it.
`

// parseInterleaved parses flags anywhere among the arguments — "troupe demo Why --json" as
// well as "troupe demo --json Why" — and returns the other arguments in order. After "--"
// everything is an argument. A word that no flag could be named for, such as "-4 8 15" or
// "-", is an argument wherever it is, so a query may start with a negative number; an
// undefined flag is still an error (an *unknownFlag), rather than a mistyped flag becoming
// part of a query. A flag's missing or wrong value is an error naming the flag as written
// and the value it wants, not the flag package's "parse error".
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return append(rest, args[1:]...), nil
		}
		if !flagLike(a) {
			rest = append(rest, a)
			args = args[1:]
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		written := a[:len(a)-len(strings.TrimLeft(a, "-"))] + name // "--seed", as typed
		f := fs.Lookup(name)
		if f == nil && name != "h" && name != "help" {
			return nil, &unknownFlag{arg: a, written: written, hint: flagHint(fs, name)}
		}
		// One flag at a time, with its value when it takes the next argument, so that
		// the flag package never reads the words after it as flags.
		n := 1
		if f != nil && !hasValue && !isBoolFlag(f) && len(args) > 1 {
			n, value = 2, args[1]
		}
		if err := fs.Parse(args[:n]); err != nil {
			if f == nil || errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			if n == 1 && !hasValue && !isBoolFlag(f) {
				return nil, fmt.Errorf("flag %s needs a value", written)
			}
			return nil, fmt.Errorf("flag %s %q: %s", written, value, wantOf(f, value, err))
		}
		args = args[n:]
	}
	return rest, nil
}

// unknownFlag is an argument written as a flag that the command does not define.
type unknownFlag struct {
	arg     string // as given: "--ouput=json"
	written string // the flag's dashes and name: "--ouput"
	hint    string // " (did you mean --output?)", or ""
}

func (e *unknownFlag) Error() string { return "unknown flag " + e.written + e.hint }

// flagHint suggests the flag of fs an unknown flag name is likely a typo or a habit of:
// another command's flag for the same thing (--json where run says --output json).
func flagHint(fs *flag.FlagSet, name string) string {
	for _, alt := range []struct{ name, flag, say string }{
		{"json", "output", "--output json"},
		{"format", "output", "--output"},
		{"output", "format", "--format"},
	} {
		if strings.EqualFold(name, alt.name) && fs.Lookup(alt.flag) != nil {
			return " (did you mean " + alt.say + "?)"
		}
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := config.Closest(strings.ToLower(name), names); s != "" {
		return " (did you mean --" + s + "?)"
	}
	return ""
}

// wantOf says what value the flag f wants, having been refused value with err.
func wantOf(f *flag.Flag, value string, err error) string {
	var v any
	if g, ok := f.Value.(flag.Getter); ok {
		v = g.Get()
	}
	switch v.(type) {
	case uint, uint64:
		return "want a whole number, 0 or more"
	case int, int64:
		return "want a whole number"
	case float64:
		return "want a number"
	case bool:
		return "want true or false"
	case time.Duration:
		return "want a duration, such as 30s"
	}
	// The flag package wraps the flag's own error in its words; the flag's own is the reason.
	if serr := f.Value.Set(value); serr != nil {
		return serr.Error()
	}
	return err.Error()
}

// flagLike reports whether an argument is written as a flag: dashes, then a letter.
func flagLike(a string) bool {
	name := strings.TrimLeft(a, "-")
	if len(name) == len(a) || name == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsLetter(r)
}

// isBoolFlag reports whether f is a flag that takes no value ("--json"), as package flag
// decides it.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// eventWriter prints a run as it goes.
type eventWriter interface {
	event(ev troupe.Event) error
	cancelled(cause error)
	end(o *troupe.Outcome, code int)
}

type jsonWriter struct{ enc *json.Encoder }

func (j jsonWriter) event(ev troupe.Event) error { return j.enc.Encode(ev) }
func (jsonWriter) cancelled(error)               {}
func (jsonWriter) end(*troupe.Outcome, int)      {}

// textWriter prints a run for people: a header with the question and the plan, one line an
// event, and the answer.
type textWriter struct {
	w          io.Writer
	agentWidth int // of the agent column: the longest planned agent's name
	start      time.Time
	agg        *troupe.Aggregation
	confs      []string // "agent 0.80", in completion order
	events     int
	shown      []string // failures' messages shown whole on their own lines
}

// Widths of the event line's columns, and of the text.
const (
	stageWidth  = 10  // "initialize"
	kindWidth   = 18  // "dispatch_completed"
	eventWidth  = 150 // an event line is cut here
	answerWidth = 96  // the answer wraps here
)

func (t *textWriter) header(req troupe.Request, eng *engine.Engine) {
	fmt.Fprintf(t.w, "troupe demo: seed 000's E2I causal analytics system, %s over synthetic prescription data\n\n", count(eng.Registry().Len(), "agent"))
	fmt.Fprintf(t.w, "question  %s\n", req.Query)
	fmt.Fprintf(t.w, "parsed    %s\n\n", formatParsed(req.ParsedQuery))
	fmt.Fprintln(t.w, "plan")
	t.agentWidth = len("agent")
	p, err := eng.Plan(req)
	if err != nil {
		fmt.Fprintf(t.w, "  cannot plan: %v\n\n", err)
	} else {
		fmt.Fprint(t.w, indent(p.String(), "  "))
		fmt.Fprintln(t.w)
		for _, st := range p.Stages {
			for _, task := range st.Tasks {
				t.agentWidth = max(t.agentWidth, len(task.Agent))
			}
		}
	}
	fmt.Fprintln(t.w, "events")
	fmt.Fprintln(t.w, strings.TrimRight(t.columns("time", "stage", "kind", "agent", "details"), " "))
}

// columns lays out one event line.
func (t *textWriter) columns(at, stage, kind, agent, detail string) string {
	return fmt.Sprintf("  %8s  %-*s  %-*s  %-*s  %s", at, stageWidth, stage, kindWidth, kind, t.agentWidth, agent, detail)
}

// formatParsed renders a parsed query (or a session state) as key=value pairs, intent first. A
// string that would read as another JSON value is quoted (mode="1", not mode=1, which is the
// number), as --state takes it.
func formatParsed(pq map[string]any) string {
	first := []string{"intent", "secondary_intents", "brands", "kpis", "regions", "time_period"}
	keys := slices.Sorted(maps.Keys(pq))
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(first, a), slices.Index(first, b)
		if ia < 0 {
			ia = len(first)
		}
		if ib < 0 {
			ib = len(first)
		}
		return ia - ib
	})
	var parts []string
	for _, k := range keys {
		v := pq[k]
		switch x := v.(type) {
		case []string:
			v = "[" + strings.Join(x, " ") + "]"
		case string:
			v = stateValue(x)
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, " ")
}

func (t *textWriter) event(ev troupe.Event) error {
	if t.events == 0 {
		t.start = ev.Time
	}
	t.events++
	line := printable(strings.TrimRight(t.columns(offset(ev.Time.Sub(t.start)), ev.Stage.String(), string(ev.Kind), ev.Agent, t.detail(ev)), " "))
	if r, ok := ev.Data.(*troupe.Result); ok && len(r.Errors) > 0 && r.Status != troupe.StatusCompleted && displayWidth(line) <= eventWidth {
		t.shown = append(t.shown, r.Errors[0].Message)
	}
	_, err := fmt.Fprintln(t.w, cut(line, eventWidth))
	return err
}

// detail says what an event carries, in a few words.
func (t *textWriter) detail(ev troupe.Event) string {
	switch d := ev.Data.(type) {
	case *troupe.RunStart:
		return fmt.Sprintf("run %s, trace %s, seed %d", ev.RunID, ev.Context.TraceID(), d.Seed)
	case *troupe.Plan:
		var stages []string
		for _, s := range d.ExecutionPlan() {
			stages = append(stages, "["+strings.Join(s, ", ")+"]")
		}
		return count(len(d.Stages), "stage") + ": " + strings.Join(stages, " → ")
	case *troupe.RoutingDecision:
		return "→ " + d.Target + ": " + d.Reason
	case *troupe.Dispatch:
		s := fmt.Sprintf("%s, step %d, %s", d.DispatchID, ev.Step, d.ExecutionMode)
		if n := len(d.UpstreamResults); n > 0 {
			s += ", " + count(n, "upstream result")
		}
		return s
	case *troupe.Result:
		if d.Status != troupe.StatusCompleted {
			msg := string(d.Status)
			if len(d.Errors) > 0 {
				msg += ": " + d.Errors[0].Message
			}
			return msg
		}
		s := string(d.Status)
		if d.Confidence != nil {
			s += fmt.Sprintf("  conf %.2f", *d.Confidence)
			t.confs = append(t.confs, fmt.Sprintf("%s %.2f", d.AgentName, *d.Confidence))
		}
		if sum := d.Summary(); sum != "" {
			// The summary takes what room the line has left; the answer below says it all.
			room := eventWidth - displayWidth(t.columns("", "", "", "", s)) - 4
			s += `  "` + cut(sum, max(room, 20)) + `"`
		}
		return s
	case *troupe.RetryScheduled:
		return fmt.Sprintf("attempt %d in %v: %s", d.Attempt, d.Backoff, d.Reason)
	case *troupe.Progress:
		b, _ := json.Marshal(d.Data)
		return d.Kind + " " + string(b)
	case *troupe.StateDelta:
		return "set " + strings.Join(slices.Sorted(maps.Keys(d.Set)), ", ")
	case *troupe.Question:
		return d.Prompt
	case *troupe.Answer:
		return fmt.Sprintf("%s approved=%v %s", d.QuestionID, d.Approved, d.Text)
	case *troupe.Warning:
		return d.Message
	case *troupe.Aggregation:
		t.agg = d
		return fmt.Sprintf("%s, confidence %.2f, consistency %.2f, %s", count(len(d.AgentsExecuted), "agent"), d.OverallConfidence, d.ConsistencyScore, count(len(d.ConflictsDetected), "conflict"))
	case *troupe.Outcome:
		s := string(d.Status)
		if d.Error != nil {
			s += ": " + d.Error.Message
		}
		if len(d.Failed) > 0 {
			s += "; failed: " + strings.Join(d.Failed, ", ")
		}
		if len(d.Skipped) > 0 {
			s += "; skipped: " + strings.Join(d.Skipped, ", ")
		}
		return s
	}
	return ""
}

func (t *textWriter) cancelled(cause error) {
	fmt.Fprintf(t.w, "\nstatus  cancelled: %v (exit %d)\n", cause, exitCancelled)
}

func (t *textWriter) end(o *troupe.Outcome, code int) {
	if a := t.agg; a != nil {
		fmt.Fprintln(t.w, "\nanswer")
		if a.Synthesis != "" {
			fmt.Fprint(t.w, wrap(printable(a.Synthesis), "  ", answerWidth))
			fmt.Fprintln(t.w)
		}
		if len(t.confs) > 0 {
			fmt.Fprintf(t.w, "  %-12s %.2f, the lowest of %s\n", "confidence", a.OverallConfidence, strings.Join(t.confs, ", "))
		} else {
			fmt.Fprintf(t.w, "  %-12s %.2f\n", "confidence", a.OverallConfidence)
		}
		if len(a.ConflictsDetected) == 0 {
			fmt.Fprintf(t.w, "  %-12s none (consistency %.2f)\n", "conflicts", a.ConsistencyScore)
		} else {
			fmt.Fprintf(t.w, "  %-12s %d (consistency %.2f, resolved by %s)\n", "conflicts", len(a.ConflictsDetected), a.ConsistencyScore, a.ResolutionStrategy)
			for _, c := range a.ConflictsDetected {
				var vals []string
				for _, v := range c.Values {
					vals = append(vals, fmt.Sprintf("%s=%s", v.Agent, brief(v.Value)))
				}
				fmt.Fprintln(t.w, printable(fmt.Sprintf("    %s: %s → %s (%s)", c.Field, strings.Join(vals, ", "), brief(c.Resolved), c.Reason)))
			}
		}
		if len(a.Warnings) == 0 {
			fmt.Fprintf(t.w, "  %-12s none\n", "warnings")
		} else {
			// One line each: a failed agent's warning repeats its error, which its own line
			// above shows whole.
			fmt.Fprintf(t.w, "  %-12s %s\n", "warnings", cut(printable(oneLine(a.Warnings[0])), answerWidth-15))
			for _, w := range a.Warnings[1:] {
				fmt.Fprintf(t.w, "  %-12s %s\n", "", cut(printable(oneLine(w)), answerWidth-15))
			}
		}
	}
	s := string(o.Status)
	if o.Error != nil {
		s += ": " + printable(oneLine(o.Error.Message))
	}
	const label = "status  "
	switch {
	case displayWidth(s) <= answerWidth-len(label):
	case o.Error != nil && t.shownWhole(o.Error.Message):
		// An agent's failure, shown whole on its line above: one line says what ended the run.
		s = cut(s, answerWidth-len(label))
	default:
		// Nothing above shows the reason whole (a routing or success-rate failure, say): the
		// status wraps it as the answer is wrapped.
		w := wrap(fmt.Sprintf("%s (exit %d)", s, code), strings.Repeat(" ", len(label)), answerWidth)
		fmt.Fprint(t.w, "\n"+label+w[len(label):])
		return
	}
	fmt.Fprintf(t.w, "\n%s%s (exit %d)\n", label, s, code)
}

// shownWhole reports whether msg, a run's error, is a failure shown whole on its own line: the
// run's error names the agent before the agent's own message.
func (t *textWriter) shownWhole(msg string) bool {
	msg = oneLine(msg)
	for _, m := range t.shown {
		if m = oneLine(m); m != "" && strings.HasSuffix(msg, m) {
			return true
		}
	}
	return false
}

// brief renders a value as JSON, cut to a few words: conflicting values can be whole results.
func brief(v any) string { return jsonvalue.Brief(v, 40) }

// offset formats the time since the run's first event: +0.4ms, +12ms, +1.3s.
func offset(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("+%.1fms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("+%dms", d.Milliseconds())
	}
	return fmt.Sprintf("+%.1fs", d.Seconds())
}

// cut shortens s to at most n columns of a terminal, ending in an ellipsis when it had to cut.
// Columns, not runes: a CJK character takes two, and a line of the live view counted in runes
// would wrap and break the redraw.
func cut(s string, n int) string {
	if displayWidth(s) <= n {
		return s
	}
	w := 0
	for i, r := range s {
		if w += runeWidth(r); w > n-1 { // room for the ellipsis
			return strings.TrimRight(s[:i], " ") + "…"
		}
	}
	return s
}

// displayWidth is the number of columns a terminal gives s (see runeWidth).
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is the number of columns a terminal gives r: two for an East Asian wide or
// fullwidth character, none for a combining mark, one for the rest, ambiguous ones included,
// as terminals outside East Asian locales draw them.
func runeWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me) {
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// oneLine folds s's whitespace, line breaks included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// printable makes text an agent supplied safe to print on a terminal, within a line that
// troupe lays out: a line break, carriage return or tab becomes a space, since the layout
// alone decides where lines end, and any other control character (C0, DEL, C1) is shown as
// Go writes it in a string, \x1b, \x7f or \u009b. An escape sequence so reads as what it is,
// "\x1b[2J", rather than clearing the screen or moving the cursor under the live view; the
// notation is the one printf and Go's %q use, plain ASCII that every terminal font has, and
// cannot be mistaken for text the agent wrote, as a control picture (␛) could. Bytes that are
// not UTF-8 become U+FFFD, so that no stray byte reads as an 8-bit control either.
func printable(s string) string { return escapeControls(s, false) }

// printableText is printable for text troupe prints as it is, not within a line it lays out
// (an error on stderr, which may quote an agent, a server or a subprocess, and may run over
// several lines): line breaks and tabs stay, and every other control character is escaped.
func printableText(s string) string { return escapeControls(s, true) }

// report prints err on stderr as troupe cmd's error, through printableText.
func report(stderr io.Writer, cmd string, err error) {
	fmt.Fprintf(stderr, "troupe %s: %s\n", cmd, printableText(err.Error()))
}

// escapeControls shows s's control characters as printable describes; with keepLines, line
// breaks and tabs stay as they are.
func escapeControls(s string, keepLines bool) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(keepLines && (r == '\n' || r == '\t')) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r): // C1
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// wrap breaks s into lines of at most width columns (longer words stand alone), each indented.
func wrap(s, prefix string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		l := displayWidth(w)
		switch {
		case n == 0:
			b.WriteString(prefix + w)
			n = len(prefix) + l
		case n+1+l > width:
			b.WriteString("\n" + prefix + w)
			n = len(prefix) + l
		default:
			b.WriteString(" " + w)
			n += 1 + l
		}
	}
	if n > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
