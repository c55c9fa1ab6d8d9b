package aggregate

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupehq/troupe"
)

// KeyInsights returns, for each completed result in order, its analysis_summary (if any) and
// then the string items of its agent_result["key_insights"] ([]string or []any; other items
// are skipped). Items are trimmed; empty ones and repeats are dropped, first occurrence kept.
// The result is never nil.
func KeyInsights(results []*troupe.Result) []string { return keyInsights(completed(results)) }

// keyInsights is KeyInsights over results already known to be completed.
func keyInsights(rs []*troupe.Result) []string {
	out := []string{}
	var seen map[string]bool // made on the first insight: most runs have none
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[s] = true
		out = append(out, s)
	}
	for _, r := range rs {
		add(r.Summary())
		switch items := r.AgentResult["key_insights"].(type) {
		case []string:
			for _, s := range items {
				add(s)
			}
		case []any:
			for _, it := range items {
				if s, ok := it.(string); ok {
					add(s)
				}
			}
		}
	}
	return out
}

// Synthesis returns a natural-language synthesis of the completed results, composed only from
// what they say:
//
//  1. the last completed result's own agent_result "synthesis" string, or else its
//     "explanation" string (seed 000's explainer writes one), when non-empty;
//  2. otherwise "<agent>: <analysis_summary>" for each completed result with a summary, in
//     order, each ended as a sentence;
//  3. otherwise, for each completed result, "<agent> contributed <its top-level fields>.".
//
// It returns "" when no result completed.
func Synthesis(results []*troupe.Result) string { return synthesis(completed(results), nil) }

// synthesis is Synthesis over results already known to be completed. keys, when not nil, are
// the results' top-level keys as collect gives them: sorted, result after result.
func synthesis(rs []*troupe.Result, keys []string) string {
	if len(rs) == 0 {
		return ""
	}
	last := rs[len(rs)-1].AgentResult
	for _, k := range [...]string{"synthesis", "explanation"} {
		if s, ok := last[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	var sentences []string
	for _, r := range rs {
		if s := strings.TrimSpace(r.Summary()); s != "" {
			sentences = append(sentences, r.AgentName+": "+sentence(s))
		}
	}
	if len(sentences) > 0 {
		return strings.Join(sentences, " ")
	}
	if keys == nil {
		var kbuf [16]string
		keys = kbuf[:0]
		for _, r := range rs {
			from := len(keys)
			for k := range r.AgentResult {
				keys = append(keys, k)
			}
			slices.Sort(keys[from:])
		}
	}
	return contributions(rs, keys)
}

// contributions says what each result contributed: "<agent> contributed <its keys>.", the
// text built in one allocation: each key joined by writeList adds at most 5 bytes (", " or
// " and "), and "no fields" stands in for none.
func contributions(rs []*troupe.Result, keys []string) string {
	size := 0
	for _, r := range rs {
		size += len(r.AgentName) + len(" contributed ") + len("no fields") + len(". ")
	}
	for _, k := range keys {
		size += len(k) + len(" and ")
	}
	var b strings.Builder
	b.Grow(size)
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.AgentName)
		b.WriteString(" contributed ")
		if len(r.AgentResult) == 0 {
			b.WriteString("no fields")
		}
		own := keys[:len(r.AgentResult)]
		keys = keys[len(own):]
		writeList(&b, own)
		b.WriteByte('.')
	}
	return b.String()
}

// sentence ends s with a full stop unless it already ends a sentence, possibly inside closing
// quotes or brackets.
func sentence(s string) string {
	t := strings.TrimRightFunc(s, func(r rune) bool {
		return r == '"' || r == '\'' || unicode.In(r, unicode.Pe, unicode.Pf)
	})
	if last, _ := utf8.DecodeLastRuneInString(t); strings.ContainsRune(".!?…。！？", last) {
		return s
	}
	return s + "."
}
