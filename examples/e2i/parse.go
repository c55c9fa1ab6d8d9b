package e2i

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// keywords say when a rule fires: a token equal to one of words, a token starting with one of
// stems, or a run of tokens equal to one of phrases (space-separated).
type keywords struct {
	words, stems, phrases []string
}

func (k keywords) match(toks []string) bool {
	phrases := make([][]string, len(k.phrases))
	for i, p := range k.phrases {
		phrases[i] = strings.Fields(p)
	}
	for i, t := range toks {
		if slices.Contains(k.words, t) {
			return true
		}
		for _, s := range k.stems {
			if strings.HasPrefix(t, s) {
				return true
			}
		}
		for _, p := range phrases {
			if hasPhrase(toks[i:], p) {
				return true
			}
		}
	}
	return false
}

func hasPhrase(toks, phrase []string) bool {
	return len(toks) >= len(phrase) && slices.Equal(toks[:len(phrase)], phrase)
}

// intentRules classify a query: the first rule that fires gives the intent, and a query no
// rule fires on is exploratory. Order matters — "what if" questions often mention a cause or
// an effect, and a request to train or deploy a model often mentions drift.
func intentRules() []struct {
	intent string
	keywords
} {
	return []struct {
		intent string
		keywords
	}{
		{"what_if", keywords{
			words: []string{"scenario", "scenarios"}, stems: []string{"simulat"},
			phrases: []string{"what if", "what would happen"},
		}},
		{"model_deployment", keywords{stems: []string{"deploy"}, phrases: []string{"ship the model", "ship a model"}}},
		{"ml_training", keywords{
			words:   []string{"train", "trains", "trained", "training", "retrain", "retrains", "retrained", "retraining"},
			phrases: []string{"fit a model", "fit the model", "build a model", "build the model"},
		}},
		{"monitoring", keywords{
			words: []string{"health", "healthy", "freshness", "alert", "alerts"}, stems: []string{"monitor", "drift"},
			phrases: []string{"data quality"},
		}},
		{"causal", keywords{
			words: []string{"why", "driver", "drivers", "driving", "effect", "effects", "fell", "fall", "falls", "falling", "dip", "dips", "dipped"},
			stems: []string{"caus", "drop", "declin", "impact", "attribut"},
		}},
		{"comparative", keywords{
			words: []string{"versus", "vs"}, stems: []string{"compar", "benchmark"},
			phrases: []string{"better than", "worse than"},
		}},
		{"trend", keywords{
			words: []string{"outlook", "growth"}, stems: []string{"trend", "forecast", "predict", "projection", "trajector"},
			phrases: []string{"over time"},
		}},
	}
}

// opportunities mark a query that, whatever its main intent, also asks where the
// opportunities are: it brings in the exploratory intent's agents too.
func opportunities() keywords {
	return keywords{words: []string{"gap", "gaps"}, stems: []string{"opportunit"}}
}

// preferRules name agents a query asks for by what it wants done, though no intent routes to
// them: a forecast, a budget allocation, a split by prescriber segment.
func preferRules() []struct {
	agent string
	keywords
} {
	return []struct {
		agent string
		keywords
	}{
		{"prediction_synthesizer", keywords{stems: []string{"forecast", "projection"}}},
		{"resource_optimizer", keywords{stems: []string{"budget", "allocat", "spend"}}},
		{"heterogeneous_optimizer", keywords{words: []string{"decile", "deciles"}, stems: []string{"segment", "heterogene"}}},
	}
}

// term is a gazetteer entry: a phrase as people write it and the name it stands for.
type term struct{ phrase, name string }

func brandTerms() []term {
	return []term{
		{"kisqali", "Kisqali"}, {"ribociclib", "Kisqali"},
		{"fabhalta", "Fabhalta"}, {"iptacopan", "Fabhalta"},
		{"verzenio", "Verzenio"}, {"abemaciclib", "Verzenio"},
	}
}

// kpiTerms name KPIs as seed 000's KPI_ROUTING_MAP does. Hyphens separate words, so
// "new-to-brand" is the phrase "new to brand".
func kpiTerms() []term {
	return []term{
		{"nrx", "NRx"}, {"new prescriptions", "NRx"}, {"new scripts", "NRx"},
		{"trx", "TRx"}, {"total prescriptions", "TRx"}, {"total scripts", "TRx"},
		{"nbrx", "NBRx"}, {"new to brand", "NBRx"},
		{"model accuracy", "model_accuracy"}, {"accuracy", "model_accuracy"},
		{"model f1", "model_f1"}, {"f1 score", "model_f1"}, {"f1", "model_f1"},
		{"match rate", "match_rate"}, {"data freshness", "data_freshness"},
		{"mau", "MAU"}, {"monthly active users", "MAU"},
		{"dau", "DAU"}, {"daily active users", "DAU"},
		{"time to release", "time_to_release"},
		{"inference latency", "inference_latency"}, {"latency", "inference_latency"},
	}
}

func regionTerms() []term {
	return []term{
		{"midwest", "Midwest"}, {"mid west", "Midwest"}, {"midwestern", "Midwest"},
		{"northeast", "Northeast"}, {"north east", "Northeast"}, {"northeastern", "Northeast"},
		{"south", "South"}, {"southern", "South"},
		{"west", "West"}, {"western", "West"},
	}
}

// MaxQueryBytes is how much of a query ParseQuery reads: a question, not a document.
const MaxQueryBytes = 4096

// ParseQuery is a keyword and gazetteer parser standing in for seed 000's NLP layer: it turns a
// question into the parsed_query the orchestrator plans from. It reads the question as
// lower-case words (runs of letters and digits; "2.5" and "1,000" are one word) and the
// symbols $, % and =; everything else, hyphens included, separates words. It reads the first
// MaxQueryBytes of q.
//
//   - "intent": the first of what_if, model_deployment, ml_training, monitoring, causal,
//     comparative and trend whose keywords the query holds ("caused", "why", "drop" and
//     "driver" make it causal; "trend" makes it a trend; "what if" a what-if), else
//     exploratory;
//   - "secondary_intents": ["exploratory"] when the query also asks about opportunities or
//     gaps under another intent;
//   - "brands", "kpis", "regions": names from gazetteers, matched on whole words, longest
//     phrase first ("Mid-West" is the Midwest, not the West), in the order the query mentions
//     them; absent when there are none;
//   - "time_period": "recent" unless the query names one ("last quarter", "past 6 weeks", …);
//   - "budget" (dollars, from "$2.5M"), "change_pct" (from "10%") and "effect_size" (from
//     "effect size 0.3" or "d = 0.3") when the query states them, and "preferred_agents" when
//     it asks for a forecast, a budget allocation or a segment split.
//
// For "What caused the drop in NRx for Kisqali in Midwest?" that is {"intent": "causal",
// "brands": ["Kisqali"], "kpis": ["NRx"], "regions": ["Midwest"], "time_period": "recent"},
// seed 000's example. ParseQuery is deterministic and safe for concurrent use.
func ParseQuery(q string) map[string]any {
	if len(q) > MaxQueryBytes {
		q = q[:MaxQueryBytes]
	}
	toks := tokenize(q)
	out := map[string]any{"intent": "exploratory", "time_period": timePeriod(toks)}
	for _, r := range intentRules() {
		if r.match(toks) {
			out["intent"] = r.intent
			break
		}
	}
	if out["intent"] != "exploratory" && opportunities().match(toks) {
		out["secondary_intents"] = []string{"exploratory"}
	}
	for _, g := range []struct {
		key   string
		terms []term
	}{{"brands", brandTerms()}, {"kpis", kpiTerms()}, {"regions", regionTerms()}} {
		if names := gazetteer(toks, g.terms); len(names) > 0 {
			out[g.key] = names
		}
	}
	for i, t := range toks {
		next := func(k int) string {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return ""
		}
		switch {
		case t == "$":
			if v, ok := amount(next(1), next(2)); ok && out["budget"] == nil {
				out["budget"] = v
			}
		case next(1) == "%" || next(1) == "percent":
			if v, err := strconv.ParseFloat(t, 64); err == nil && out["change_pct"] == nil {
				out["change_pct"] = v
			}
		case t == "effect" && next(1) == "size", t == "d" && next(1) == "=":
			n := next(2)
			if n == "of" {
				n = next(3)
			}
			if v, err := strconv.ParseFloat(n, 64); err == nil && v > 0 && out["effect_size"] == nil {
				out["effect_size"] = v
			}
		}
	}
	var preferred []string
	for _, p := range preferRules() {
		if p.match(toks) {
			preferred = append(preferred, p.agent)
		}
	}
	if len(preferred) > 0 {
		out["preferred_agents"] = preferred
	}
	return out
}

// tokenize splits q into lower-case words and the symbols $, % and =.
func tokenize(q string) []string {
	var toks []string
	var word []rune
	flush := func() {
		if len(word) > 0 {
			toks = append(toks, string(word))
			word = word[:0]
		}
	}
	rs := []rune(q)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word = append(word, unicode.ToLower(r))
		case r == '.' && len(word) == 0 && i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			word = append(word, '0', '.') // .5 is 0.5
		case (r == '.' || r == ',') && len(word) > 0 && unicode.IsDigit(word[len(word)-1]) &&
			i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			if r == '.' {
				word = append(word, r)
			} // a thousands separator is dropped: 1,000 is 1000
		default:
			flush()
			if r == '$' || r == '%' || r == '=' {
				toks = append(toks, string(r))
			}
		}
	}
	flush()
	return toks
}

// timePeriod finds the first time span the words name: "last|past|previous|prior|this" with
// an optional count and a unit, "year to date", "all time", "since launch", or a quarter
// (q1–q4). It is "recent" when they name none.
func timePeriod(toks []string) string {
	for i, t := range toks {
		rest := toks[i+1:]
		switch {
		case t == "last" || t == "past" || t == "previous" || t == "prior" || t == "this":
			if len(rest) >= 2 {
				if n, err := strconv.Atoi(rest[0]); err == nil && n > 0 {
					switch rest[1] {
					case "week", "weeks":
						return "last " + strconv.Itoa(n) + " weeks"
					case "month", "months":
						return "last " + strconv.Itoa(n) + " months"
					}
				}
			}
			if len(rest) >= 1 {
				switch rest[0] {
				case "week", "month", "quarter", "year":
					return "last " + rest[0]
				}
			}
		case t == "ytd" || hasPhrase(toks[i:], []string{"year", "to", "date"}):
			return "year to date"
		case hasPhrase(toks[i:], []string{"all", "time"}) || hasPhrase(toks[i:], []string{"since", "launch"}):
			return "all time"
		case len(t) == 2 && t[0] == 'q' && t[1] >= '1' && t[1] <= '4':
			return "last quarter"
		}
	}
	return "recent"
}

// amount reads a dollar amount: a number with an optional scale, attached ("2.5m") or as the
// next word ("2.5 million").
func amount(tok, next string) (float64, bool) {
	i := strings.IndexFunc(tok, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, scale := tok, next
	if i >= 0 {
		num, scale = tok[:i], tok[i:]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	switch scale {
	case "k", "thousand":
		v *= 1e3
	case "m", "mm", "million":
		v *= 1e6
	case "bn", "b", "billion":
		v *= 1e9
	}
	return v, true
}

// gazetteer returns the names of the terms the words mention, in the order they mention them.
// Longer phrases claim their words first, so "mid west" is never also "west".
func gazetteer(toks []string, terms []term) []string {
	type phrase struct {
		words []string
		name  string
	}
	ps := make([]phrase, len(terms))
	for i, t := range terms {
		ps[i] = phrase{strings.Fields(t.phrase), t.name}
	}
	slices.SortStableFunc(ps, func(a, b phrase) int { return len(b.words) - len(a.words) })
	claimed := make([]string, len(toks)) // token → the name that claimed it
	for _, p := range ps {
		for i := 0; i+len(p.words) <= len(toks); i++ {
			if hasPhrase(toks[i:], p.words) && !slices.ContainsFunc(claimed[i:i+len(p.words)], func(s string) bool { return s != "" }) {
				for j := range p.words {
					claimed[i+j] = p.name
				}
			}
		}
	}
	var names []string
	for _, n := range claimed {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
