package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
)

// progress shows a run for people. On a terminal it keeps a live view — the stages, each
// agent with a spinner while it runs, then its duration and outcome, replicates of a bundle
// as they finish — and redraws it in place with ANSI escapes as events arrive and the spinner
// turns. Elsewhere it prints one plain line a step. Either way it ends with the aggregated
// answer. Its methods are safe for concurrent use (the spinner redraws from its own
// goroutine, which close stops and waits for).
type progress struct {
	w    io.Writer
	term bool
	now  func() time.Time

	mu    sync.Mutex
	file  *config.File
	req   troupe.Request
	plan  *troupe.Plan
	rows  []*row          // in the order they appeared
	byID  map[string]*row // by dispatch id
	notes []string        // warnings, retries, questions, routing decisions
	agg   *troupe.Aggregation
	confs []string
	shown []string // failures' messages printed whole on their lines (plain output only)
	drawn int      // lines of the live view on screen
	width int      // of the terminal: longer lines are cut, or they would wrap and break the redraw
	frame int
	ended bool

	stop chan struct{}
	done chan struct{}
}

// row is one dispatch (or a planned agent not yet dispatched).
type row struct {
	agent, id, parent string
	stage, depth      int
	status            string // "waiting", "running", or the result's status
	routed            bool   // a planned task whose agent the router chooses
	start, end        time.Time
	detail            string
	subs              []string // replicates and progress lines, latest last
}

// spinner frames, and how often the live view turns them.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinEvery = 100 * time.Millisecond

// maxSubs bounds the progress lines kept per agent in the live view.
const maxSubs = 4

func newProgress(w io.Writer, f *config.File, req troupe.Request, term bool, now func() time.Time) *progress {
	p := &progress{w: w, term: term, now: now, file: f, req: req, byID: map[string]*row{}, width: eventWidth}
	if tw := termWidth(w); tw > 0 {
		p.width = tw - 1
	}
	title := f.Name
	if title == "" {
		title = f.Path
	}
	fmt.Fprintf(w, "troupe run: %s, %s (%s)\n", title, count(len(f.Order), "agent"), f.Path)
	fmt.Fprintf(w, "query   %s\n", printable(req.Query))
	if len(req.ParsedQuery) > 0 {
		fmt.Fprintf(w, "parsed  %s\n", formatParsed(req.ParsedQuery))
	}
	fmt.Fprintln(w)
	if term {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.spin()
	}
	return p
}

// spin turns the spinner until close.
func (p *progress) spin() {
	defer close(p.done)
	t := time.NewTicker(spinEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.ended {
				p.frame++
				p.redraw()
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) close() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
}

func (p *progress) event(ev troupe.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string // the plain line of the event, if it has one
	switch d := ev.Data.(type) {
	case *troupe.Plan:
		p.plan = d
		var stages []string
		for i, st := range d.Stages {
			var names []string
			for _, t := range st.Tasks {
				r := &row{agent: t.Agent, stage: i + 1, status: "waiting"}
				if t.Agent == "" {
					r.agent, r.routed = "(routed)", true
				}
				names = append(names, r.agent)
				p.rows = append(p.rows, r)
			}
			stages = append(stages, "["+strings.Join(names, ", ")+"]")
		}
		line = fmt.Sprintf("plan    %d stage%s: %s", len(d.Stages), plural(len(d.Stages)), strings.Join(stages, " → "))
	case *troupe.RoutingDecision:
		// The decision names the dispatch to come: the planned row it fills takes its id.
		r := p.byID[ev.DispatchID]
		if r == nil {
			if r = p.claim(ev.Step, d.Target); r != nil {
				r.id = ev.DispatchID
				p.byID[ev.DispatchID] = r
			}
		}
		planned := r != nil && !r.routed && r.agent == d.Target
		if r != nil {
			r.agent, r.routed = d.Target, false
		}
		if planned || d.Metadata["source"] == "task" {
			break // the planner chose; the plan line said so
		}
		line = fmt.Sprintf("route   → %s: %s", d.Target, d.Reason)
		p.notes = append(p.notes, line)
	case *troupe.Dispatch:
		r := p.byID[ev.DispatchID]
		if r == nil {
			if ev.Parent == "" {
				r = p.claim(ev.Step, ev.Agent)
			}
			if r == nil {
				r = &row{stage: ev.Step}
				p.insert(r, ev.Parent)
			}
			r.id, r.parent = ev.DispatchID, ev.Parent
			p.byID[ev.DispatchID] = r
		}
		r.agent, r.status, r.start, r.subs = ev.Agent, "running", ev.Time, nil
		line = fmt.Sprintf("%s▸ %s started", indent2(r.depth), ev.Agent)
		if r.stage > 0 && r.depth == 0 && p.plan != nil {
			line = fmt.Sprintf("▸ stage %d/%d  %s started", r.stage, len(p.plan.Stages), ev.Agent)
		}
	case *troupe.Result:
		r := p.byID[ev.DispatchID]
		if r == nil {
			r = &row{agent: ev.Agent, stage: ev.Step, start: ev.Time}
			p.insert(r, ev.Parent)
			p.byID[ev.DispatchID] = r
		}
		r.status, r.end = string(d.Status), ev.Time
		r.detail = resultDetail(d)
		if d.Status == troupe.StatusCompleted && d.Confidence != nil && r.depth == 0 {
			p.confs = append(p.confs, fmt.Sprintf("%s %.2f", d.AgentName, *d.Confidence))
		}
		line = fmt.Sprintf("%s%s %s %s in %s", indent2(r.depth), mark(r.status), r.agent, r.status, duration(r.end.Sub(r.start)))
		if r.detail != "" {
			line += ": " + r.detail
		}
		if !p.term && d.Status != troupe.StatusCompleted && len(d.Errors) > 0 {
			// The plain line is printed whole; the live view cuts its rows to the terminal.
			p.shown = append(p.shown, d.Errors[0].Message)
		}
	case *troupe.Progress:
		sub := progressLine(d)
		if r := p.byID[ev.DispatchID]; r != nil && sub != "" {
			r.subs = append(r.subs, sub)
			if len(r.subs) > maxSubs {
				r.subs = r.subs[len(r.subs)-maxSubs:]
			}
			line = fmt.Sprintf("%s  · %s %s", indent2(r.depth), r.agent, sub)
		}
	case *troupe.RetryScheduled:
		line = fmt.Sprintf("↻ %s: attempt %d in %v: %s", ev.Agent, d.Attempt, d.Backoff, d.Reason)
		p.notes = append(p.notes, line)
	case *troupe.Warning:
		line = "! " + d.Message
		if ev.Agent != "" {
			line = "! " + ev.Agent + ": " + d.Message
		}
		p.notes = append(p.notes, line)
	case *troupe.Question:
		line = fmt.Sprintf("? %s asks: %s", ev.Agent, d.Prompt)
		p.notes = append(p.notes, line)
	case *troupe.Answer:
		line = fmt.Sprintf("  answered %s", d.QuestionID)
	case *troupe.Aggregation:
		p.agg = d
	}
	if p.term {
		p.redraw()
	} else if line != "" {
		fmt.Fprintln(p.w, printable(line))
	}
}

// claim returns the planned row, not yet dispatched, that a dispatch of agent in plan stage
// step fills: the row planned for agent, else one whose agent the router was to choose.
func (p *progress) claim(step int, agent string) *row {
	for _, routed := range []bool{false, true} {
		for _, r := range p.rows {
			if r.id == "" && r.depth == 0 && r.status == "waiting" && (step == 0 || r.stage == step) &&
				r.routed == routed && (routed || r.agent == agent) {
				return r
			}
		}
	}
	return nil
}

// insert adds r after its parent's last descendant, one level deeper, or at the end.
func (p *progress) insert(r *row, parent string) {
	par := p.byID[parent]
	if par == nil {
		p.rows = append(p.rows, r)
		return
	}
	r.depth, r.stage = par.depth+1, par.stage
	i := slices.Index(p.rows, par) + 1
	for i < len(p.rows) && p.rows[i].depth > par.depth {
		i++
	}
	p.rows = slices.Insert(p.rows, i, r)
}

// redraw replaces the live view on the terminal.
func (p *progress) redraw() {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	b.WriteString("\x1b[J")
	lines := p.view()
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	p.drawn = len(lines)
	io.WriteString(p.w, b.String())
}

// view is the live view's lines: a line a stage, a line an agent under it, its progress
// lines under that, then the latest notes.
func (p *progress) view() []string {
	var out []string
	stage := -1
	width := 10
	for _, r := range p.rows {
		width = max(width, len(r.agent)+2*r.depth)
	}
	for _, r := range p.rows {
		if r.depth == 0 && r.stage != stage {
			stage = r.stage
			n := 0
			if p.plan != nil {
				n = len(p.plan.Stages)
			}
			out = append(out, fmt.Sprintf("stage %d/%d", stage, n))
		}
		m := mark(r.status)
		var tail string
		switch r.status {
		case "waiting":
			m, tail = "·", "waiting"
		case "running":
			m = spinner[p.frame%len(spinner)]
			tail = "running " + duration(p.now().Sub(r.start))
			if p.ended {
				m, tail = "◌", "did not finish"
			}
		default:
			tail = fmt.Sprintf("%-9s %7s", r.status, duration(r.end.Sub(r.start)))
			if r.detail != "" {
				tail += "  " + r.detail
			}
		}
		pad := strings.Repeat("  ", r.depth)
		out = append(out, cut(printable(fmt.Sprintf("  %s%s %-*s  %s", pad, m, width-2*r.depth, r.agent, tail)), p.width))
		for _, s := range r.subs {
			out = append(out, cut(printable(fmt.Sprintf("  %s    · %s", pad, s)), p.width))
		}
	}
	notes := p.notes
	if len(notes) > 5 {
		notes = notes[len(notes)-5:]
	}
	if len(notes) > 0 {
		out = append(out, "")
		for _, n := range notes {
			out = append(out, cut(printable(n), p.width))
		}
	}
	return out
}

func (p *progress) end(o *troupe.Outcome, code int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.term {
		p.redraw()
	}
	if o.Status == troupe.RunCancelled {
		var finished, unfinished []string
		for _, r := range p.rows {
			if r.depth > 0 {
				continue
			}
			// An agent stopped by the cancellation ends cancelled, or timed out when it did not
			// stop within the engine's grace: either way it did not finish.
			switch r.status {
			case "waiting", "running", string(troupe.StatusCancelled), string(troupe.StatusTimeout):
				unfinished = append(unfinished, r.agent)
			default:
				finished = append(finished, r.agent+" "+r.status)
			}
		}
		fmt.Fprintln(p.w)
		fmt.Fprintf(p.w, "finished     %s\n", listOrNone(finished))
		fmt.Fprintf(p.w, "unfinished   %s\n", listOrNone(unfinished))
	}
	tw := &textWriter{w: p.w, agg: p.agg, confs: p.confs, shown: p.shown}
	if o.Status == troupe.RunPaused && len(o.Questions) > 0 {
		fmt.Fprintf(p.w, "\nwaiting for a human: %s, and troupe run takes no answers, so the run stops here\n", count(len(o.Questions), "open question"))
		for _, q := range o.Questions {
			who := q.Agent
			if who == "" {
				who = "review"
			}
			fmt.Fprintln(p.w, printable(fmt.Sprintf("  %s (%s): %s", who, q.ID, q.Prompt)))
		}
		if p.file.Coordinator != nil { // a conversational file: chat holds the conversation
			dir := p.file.Path
			if filepath.Base(dir) == "troupe.yaml" {
				dir = filepath.Dir(dir)
			}
			fmt.Fprintf(p.w, "  to answer, hold the conversation instead: troupe chat %s\n", dir)
		}
	}
	tw.end(o, code)
	return code
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func indent2(depth int) string { return strings.Repeat("  ", depth) }

// mark is a result status's symbol.
func mark(status string) string {
	switch status {
	case string(troupe.StatusCompleted):
		return "✓"
	case string(troupe.StatusTimeout):
		return "⏱"
	case string(troupe.StatusCancelled):
		return "⊘"
	case "running", "waiting":
		return "·"
	}
	return "✗"
}

// resultDetail says what a result is in a few words: its confidence and summary, or its error.
// It is one line, as each step is: an error quoting an agent's stderr has its line breaks.
func resultDetail(r *troupe.Result) string {
	if r.Status != troupe.StatusCompleted {
		if len(r.Errors) > 0 {
			return r.Errors[0].Code + " " + oneLine(r.Errors[0].Message)
		}
		return ""
	}
	var parts []string
	if r.Confidence != nil {
		parts = append(parts, fmt.Sprintf("confidence %.2f", *r.Confidence))
	}
	if s := r.Summary(); s != "" {
		parts = append(parts, `"`+cut(oneLine(s), 70)+`"`)
	}
	return strings.Join(parts, "  ")
}

// progressLine renders an agent_progress payload: a bundle's replicate events by what they
// say, anything else as its kind and data.
func progressLine(d *troupe.Progress) string {
	m, _ := d.Data.(map[string]any)
	get := func(k string) string {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return "?"
	}
	switch d.Kind {
	case "replicate_started":
		return ""
	case "replicate_done":
		s := fmt.Sprintf("replicate %s (seed %s) %s", get("replicate"), get("seed"), get("status"))
		if v, ok := m["valid"].(bool); ok && !v {
			s += ", invalid"
		}
		return s
	case "replicate_progress":
		inner := m["data"]
		if s, ok := inner.(string); ok {
			return fmt.Sprintf("replicate %s: %s", get("replicate"), s)
		}
		b, _ := json.Marshal(inner)
		return fmt.Sprintf("replicate %s: %s %s", get("replicate"), get("kind"), cut(string(b), 80))
	case "partial_summary":
		if why, ok := m["reason"].(string); ok && why != "" {
			return why // the bundle's own account of a case the distance does not decide
		}
		agreed, _ := m["early_stop"].(bool)
		what := fmt.Sprintf("(distance %s, confidence %s)", short(m["distance"], "%.3f"), short(m["confidence"], "%.2f"))
		eps := short(m["epsilon"], "%g")
		dist, okD := number(m["distance"])
		e, okE := number(m["epsilon"])
		switch {
		case agreed:
			return fmt.Sprintf("first two replicates agree within ε = %s %s: stopping early", eps, what)
		case okD && okE && dist <= e: // close, but the evidence package stops only on two valid ones
			return fmt.Sprintf("first two replicates are within ε = %s %s but not both valid: running the rest", eps, what)
		}
		return fmt.Sprintf("first two replicates differ by more than ε = %s %s: running the rest", eps, what)
	case "bundle_ready":
		k, _ := number(m["k"])
		s := fmt.Sprintf("bundle ready: %s, confidence %s", count(int(k), "replicate"), short(m["confidence"], "%.2f"))
		if stopped, _ := m["early_stop"].(bool); stopped {
			s += ", stopped early"
		}
		return s
	case "stderr":
		if s, ok := d.Data.(string); ok {
			return s
		}
		if l, ok := m["line"]; ok {
			return fmt.Sprint(l)
		}
	}
	b, _ := json.Marshal(d.Data)
	return d.Kind + " " + cut(string(b), 100)
}

// duration formats a duration short: 850µs, 12ms, 1.3s.
func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// count returns n and the noun, in the plural unless n is 1: "1 agent", "17 agents".
func count(n int, noun string) string {
	return fmt.Sprintf("%d %s%s", n, noun, plural(n))
}

// number reads a JSON number as a float64 whatever Go type holds it (float64, int, json.Number…):
// as the number it encodes to.
func number(v any) (float64, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64) // a string, a bool or null does not parse
	return f, err == nil
}

// short formats a number of a progress payload with format ("%.2f"), or says "?" when it is
// missing or not a number.
func short(v any, format string) string {
	if f, ok := number(v); ok {
		return fmt.Sprintf(format, f)
	}
	return "?"
}
