package evidence

import (
	"context"
	"fmt"
	"strings"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/bundle"
)

// finding is what one lint check reports about one replicate.
type finding struct {
	lint, replicate string
	findings        []string
	err             error
}

// startLints runs every lint on one replicate's data, each in its own goroutine with its own
// tiny budget. Nothing waits for them but Run's return, which cancels them first.
func (r *run) startLints(id string, data any) {
	for _, l := range r.s.Lints {
		r.lintWG.Add(1)
		go func() {
			defer r.lintWG.Done()
			ctx, cancel := context.WithTimeout(r.lintCtx, l.Timeout)
			defer cancel()
			f := finding{lint: l.Name, replicate: id}
			func() {
				defer func() {
					if v := recover(); v != nil {
						f.err = troupe.NewPanicError(v)
					}
				}()
				// Each check gets its own copy: a lint cannot change what the bundle reports.
				f.findings = l.Check(ctx, id, jsonish(data))
			}()
			r.lints <- f // buffered for every (replicate, lint) pair: never blocks
		}()
	}
}

// drainLints reports the findings that have arrived, without waiting for more.
func (r *run) drainLints() {
	for {
		select {
		case f := <-r.lints:
			r.lintFinding(f)
		default:
			return
		}
	}
}

func (r *run) lintFinding(f finding) {
	if f.err != nil {
		// The lint failed (its check panicked): said in the result as its findings would
		// be, so that the run's warnings show the lint did not run, not that it found nothing.
		msg := r.s.red.String(fmt.Sprintf("lint %s failed on %s: %v", f.lint, f.replicate, f.err))
		r.warnings = append(r.warnings, msg)
		r.emit(EventWarning, map[string]any{"lint": f.lint, "replicate": f.replicate, "message": msg})
		return
	}
	for _, msg := range f.findings {
		msg = r.s.red.String(fmt.Sprintf("lint %s on %s: %s", f.lint, f.replicate, msg))
		r.warnings = append(r.warnings, msg)
		r.emit(EventWarning, map[string]any{"lint": f.lint, "replicate": f.replicate, "message": msg})
	}
}

// LintAgent makes a lint of an agent: it is dispatched with the replicate's data under
// UserContext["lint_target"] and the replicate's id under UserContext["replicate"]; its
// findings are its result's warnings and the strings of agent_result["findings"].
func LintAgent(name string, a troupe.Agent, d *troupe.Dispatch) Lint {
	return Lint{Name: name, Check: func(ctx context.Context, replicate string, data any) []string {
		ld := troupe.NewDispatch()
		if d != nil {
			ld.SessionID, ld.QueryID, ld.Query = d.SessionID, d.QueryID, d.Query
		}
		ld.TargetAgent, ld.DispatchReason = name, "lint"
		ld.UserContext = map[string]any{"lint_target": data, ReplicateKey: replicate}
		res, err := a.Run(ctx, ld)
		if err != nil {
			if ctx.Err() != nil {
				return nil // cut off by its budget or the bundle being ready: nothing to say
			}
			return []string{"lint agent failed: " + err.Error()}
		}
		if res == nil {
			return nil
		}
		out := append([]string(nil), res.Warnings...)
		if fs, ok := res.AgentResult["findings"].([]any); ok {
			for _, f := range fs {
				if s, ok := f.(string); ok {
					out = append(out, s)
				}
			}
		} else if fs, ok := res.AgentResult["findings"].([]string); ok {
			out = append(out, fs...)
		}
		return out
	}}
}

// summaryText describes the bundle in a few sentences computed from its statistics.
func summaryText(b *bundle.Bundle) string {
	s := b.Summary
	valid := 0
	for _, r := range b.Replicates {
		if r.Quality.Valid {
			valid++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d of %d replicates valid", valid, b.Meta.K)
	if b.Meta.EarlyStop {
		fmt.Fprintf(&sb, " (stopped early: the first two agreed within epsilon %v)", b.Meta.Epsilon)
	}
	fmt.Fprintf(&sb, "; agreement confidence %.2f", s.Confidence)
	if valid < 2 {
		sb.WriteString(" (fewer than two valid replicates: agreement not measurable)")
	}
	fmt.Fprintf(&sb, "; consensus on %d field", len(s.Consensus))
	if len(s.Consensus) != 1 {
		sb.WriteString("s")
	}
	switch n := len(s.Disagreements); n {
	case 0:
		sb.WriteString("; no disagreements.")
	default:
		d := s.Disagreements[0]
		fmt.Fprintf(&sb, "; %d disagreement", n)
		if n != 1 {
			sb.WriteString("s")
		}
		fmt.Fprintf(&sb, ", largest on %q (distance %.2f across %s).", d.Field, d.Distance, strings.Join(d.Replicates, ", "))
	}
	if s.Truncated {
		sb.WriteString(" Summary truncated to its caps.")
	}
	return sb.String()
}
