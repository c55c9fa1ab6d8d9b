package e2i

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/troupehq/troupe"
)

// scope is what a dispatch asks about, resolved against the dataset: the brand, regions and KPI
// of its parsed query (defaults where it names none), the window of weeks its time period
// covers, and warnings for what it asked and the data cannot answer.
type scope struct {
	brand    string
	regions  []string // as asked, known ones only; empty means "find the region"
	kpi      string
	period   string
	window   int // weeks, counted back from the latest
	asked    int // weeks the period asked about spans, which may be more than the data holds
	warnings []string
}

// scope resolves what d asks about. A brand the data does not hold is invalid input: an
// answer about another brand would answer a question nobody asked. So are regions the data
// does not hold, when the query names no region it does (beside one it does, they are a
// warning). A query that names no brand is about the data's first brand, Kisqali, and the
// scope's warnings say so, and name what the query mentioned where a brand could stand (its
// "mentions"): if one of those was meant as a brand, the warning tells the reader it has no
// data. A period longer than the data, or a calendar year, is analysed over all of it, with a
// warning.
func (ds *Dataset) scope(d *troupe.Dispatch) (scope, error) {
	pq := d.ParsedQuery
	s := scope{brand: ds.brands[0], kpi: "NRx", period: "recent"}
	brands := stringsOf(pq["brands"])
	if unknown := slices.DeleteFunc(slices.Clone(brands), func(b string) bool { return ds.brandIndex(b) >= 0 }); len(unknown) > 0 {
		return scope{}, noData("brand", unknown, ds.brands, "ask about "+orList(ds.brands))
	}
	switch {
	case len(brands) == 0:
		s.warnings = append(s.warnings, fmt.Sprintf("the question names none of the brands in the data (%s)%s; analysed %s",
			list(ds.brands), mentioned(pq), s.brand))
	default:
		s.brand = brands[0]
		if len(brands) > 1 {
			s.warnings = append(s.warnings, fmt.Sprintf("analysed %s of %s", s.brand, strings.Join(brands, ", ")))
		}
	}
	var unknownRegions []string
	for _, r := range stringsOf(pq["regions"]) {
		if ds.regionIndex(r) < 0 {
			unknownRegions = append(unknownRegions, r)
			continue
		}
		s.regions = append(s.regions, r)
	}
	switch {
	case len(unknownRegions) > 0 && len(s.regions) == 0:
		// As for a brand: an answer about another region answers a question nobody asked.
		return scope{}, noData("region", unknownRegions, ds.regions, "ask about the "+orList(ds.regions))
	case len(unknownRegions) > 0:
		s.warnings = append(s.warnings, fmt.Sprintf("no data for %s; analysed %s", list(unknownRegions), list(s.regions)))
	}
	if ks := stringsOf(pq["kpis"]); len(ks) > 0 {
		i := slices.IndexFunc(ks, func(k string) bool { return slices.Contains(kpis(), k) })
		if i < 0 {
			s.warnings = append(s.warnings, fmt.Sprintf("no data for %s; analysed %s", strings.Join(ks, ", "), s.kpi))
		} else {
			s.kpi = ks[i]
		}
	}
	if p, ok := pq["time_period"].(string); ok && p != "" {
		s.period = p
	}
	s.window, s.asked = windowWeeks(s.period)
	switch {
	case strings.HasPrefix(s.period, "year "):
		s.warnings = append(s.warnings, fmt.Sprintf("the data is %d numbered weeks without calendar dates, so %s cannot be picked out of it; analysed all %d weeks",
			Weeks, strings.TrimPrefix(s.period, "year "), Weeks))
	case s.asked > Weeks:
		s.warnings = append(s.warnings, fmt.Sprintf("the data holds %d weeks, fewer than the %s (%d weeks) asked about; analysed all %d", Weeks, s.period, s.asked, Weeks))
	}
	return s, nil
}

// region returns the first region asked about, or "" when none was.
func (s *scope) region() string {
	if len(s.regions) == 0 {
		return ""
	}
	return s.regions[0]
}

// span describes the window for people: "the last 8 weeks", "the last quarter (13 weeks)".
func (s *scope) span() string {
	w := fmt.Sprintf("the last %d weeks", s.window)
	if s.window == 1 {
		w = "the last week"
	}
	switch {
	case s.asked > s.window || strings.HasPrefix(s.period, "year "):
		return fmt.Sprintf("all %d weeks of data", s.window) // the period asked is not in it
	case s.period == "recent" || strings.HasPrefix(s.period, "last ") && strings.HasSuffix(s.period, " weeks"):
		return w
	case strings.HasPrefix(s.period, "last "):
		return fmt.Sprintf("the %s (%d weeks)", s.period, s.window)
	}
	return fmt.Sprintf("%s (%d weeks)", s.period, s.window)
}

// windowWeeks turns a time period of ParseQuery into a number of weeks, capped at the data
// (window), and the number of weeks the period spans (asked), which may exceed the data.
func windowWeeks(period string) (window, asked int) {
	w := 8 // "recent": the last two months
	switch period {
	case "last week":
		w = 1
	case "last month":
		w = 4
	case "last quarter":
		w = 13
	case "last year":
		w = 52
	case "year to date", "all time":
		w = Weeks
	default:
		if strings.HasPrefix(period, "year ") { // a calendar year: the data has no dates
			w = Weeks
		}
		// "last N days", "last N weeks", "last N months", "last N quarters", "last N years"
		if f := strings.Fields(period); len(f) == 3 && f[0] == "last" {
			if n, err := strconv.Atoi(f[1]); err == nil {
				switch f[2] {
				case "days", "day":
					w = (n + 6) / 7
				case "weeks", "week":
					w = n
				case "months", "month":
					w = int(math.Round(float64(n) * 52 / 12))
				case "quarters", "quarter":
					w = 13 * n
				case "years", "year":
					w = 52 * n
				}
			}
		}
	}
	w = max(w, 1)
	return min(w, Weeks), w
}

// stringsOf reads a list of strings as a parsed query holds it: []string in process, []any
// once it has been through JSON.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return []string{v}
	}
	return nil
}

// number reads a number as Go code or encoding/json may have stored it.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// lookup walks nested objects: lookup(m, "causal_effect", "change_week").
func lookup(m map[string]any, path ...string) (any, bool) {
	var v any = m
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func lookupNumber(m map[string]any, path ...string) (float64, bool) {
	v, ok := lookup(m, path...)
	if !ok {
		return 0, false
	}
	return number(v)
}

func lookupString(m map[string]any, path ...string) string {
	v, _ := lookup(m, path...)
	s, _ := v.(string)
	return s
}

// upstream returns the agent_result of the latest upstream result of agent.
func upstream(d *troupe.Dispatch, agent string) (map[string]any, bool) {
	for i := len(d.UpstreamResults) - 1; i >= 0; i-- {
		if u := d.UpstreamResults[i]; u.Agent == agent && len(u.Result) > 0 {
			return u.Result, true
		}
	}
	return nil, false
}

// causalEffect finds causal_impact's estimate of s's brand and KPI: in upstream results, else
// in session state (a run may carry it from an earlier query of the session). An estimate of
// another brand or KPI — session state left by an earlier question — is none: its change week
// and its size say nothing about this one.
func causalEffect(d *troupe.Dispatch, s *scope) (map[string]any, bool) {
	var found []any
	if r, ok := upstream(d, "causal_impact"); ok {
		found = append(found, r["causal_effect"])
	}
	if v, ok := d.State("causal_effect"); ok {
		found = append(found, v)
	}
	for _, v := range found {
		if ce, ok := v.(map[string]any); ok && lookupString(ce, "brand") == s.brand && lookupString(ce, "kpi") == s.kpi {
			return ce, true
		}
	}
	return nil, false
}

// completed builds the result an agent returns: seed 000 requires agent_result for a
// completed status, and every agent here also reports a summary and a confidence.
func completed(summary string, confidence float64, agentResult map[string]any, warnings []string) *troupe.Result {
	return &troupe.Result{
		AgentResult:     agentResult,
		AnalysisSummary: &summary,
		Confidence:      troupe.Ptr(round(clamp01(confidence), 4)),
		Warnings:        warnings,
	}
}

// pct formats a fraction as a signed percentage: -0.1213 → "-12.1%".
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// units formats a count with thousands separators: 1540.3 → "1,540".
func units(f float64) string {
	s := strconv.FormatFloat(math.Abs(math.Round(f)), 'f', 0, 64)
	var b strings.Builder
	if math.Round(f) < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// list joins names as prose: "a", "a and b", "a, b and c".
func list(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// mentioned says what a query mentioned where a brand could stand: ", only Ozempic", or "".
func mentioned(pq map[string]any) string {
	if m := stringsOf(pq["mentions"]); len(m) > 0 {
		return ", only " + list(m)
	}
	return ""
}

// orList joins names as alternatives: "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return list(names)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// plural formats a count of things: "1 week", "3 weeks".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// noData is the INVALID_INPUT error for names (of kind "brand" or "region") the data does not
// hold, saying what it holds instead.
func noData(kind string, unknown, held []string, fallback string) error {
	if len(unknown) > 1 {
		kind += "s"
	}
	return &troupe.AgentError{
		Code:           troupe.CodeInvalidInput,
		Message:        fmt.Sprintf("no data for %s %s: the data holds %s", kind, list(unknown), list(held)),
		FallbackAction: fallback,
	}
}
