package e2i

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Keywords say when a rule fires: a word equal to one of Words, a word starting with one of
// Stems, or a run of words equal to one of Phrases (space-separated).
type Keywords struct {
	Words, Stems, Phrases []string
}

func (k Keywords) match(toks []string) bool {
	phrases := make([][]string, len(k.Phrases))
	for i, p := range k.Phrases {
		phrases[i] = strings.Fields(p)
	}
	for i, t := range toks {
		if slices.Contains(k.Words, t) {
			return true
		}
		for _, s := range k.Stems {
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

// IntentKeywords name an intent and the keywords that give it.
type IntentKeywords struct {
	Intent string
	Keywords
}

// AgentKeywords name an agent a query asks for and the keywords that ask for it.
type AgentKeywords struct {
	Agent string
	Keywords
}

// Term is a gazetteer entry: a name and the phrases, lower case, people write it as.
type Term struct {
	Name    string
	Phrases []string
}

// Gazetteer fills the parsed query's Key (brands, kpis, regions) with the names of the terms
// a query mentions.
type Gazetteer struct {
	Key   string
	Terms []Term
}

// ParserRules are the keyword rules and gazetteers of the query parser: the part of it that
// is data, which a troupe configuration file can declare (its parser section). Numbers,
// amounts and time periods are read by code, the same for every rule set. The zero value
// classifies every query as DefaultIntent ("" when unset) and finds no entities.
type ParserRules struct {
	// DefaultIntent is the intent of a query no rule of Intents fires on.
	DefaultIntent string
	// Intents classify a query: the first rule that fires gives the intent.
	Intents []IntentKeywords
	// Secondary rules add their intent to "secondary_intents" when they fire on a query
	// whose main intent is another.
	Secondary []IntentKeywords
	// Prefer rules add their agent to "preferred_agents" when they fire.
	Prefer []AgentKeywords
	// Gazetteers find entities.
	Gazetteers []Gazetteer
}

// DefaultParserRules returns the rules ParseQuery uses; examples/e2i/troupe.yaml declares the
// same. Each call returns a fresh value.
//
// Intent rules are ordered: "what if" questions often mention a cause or an effect, and a
// request to train or deploy a model often mentions drift. A query that, whatever its main
// intent, also asks where the opportunities are brings in the exploratory intent's agents
// too. Preferred agents are those a query asks for by what it wants done, though no intent
// routes to them: a forecast, a budget allocation, a split by prescriber segment.
func DefaultParserRules() ParserRules {
	return ParserRules{
		DefaultIntent: "exploratory",
		Intents: []IntentKeywords{
			{"what_if", Keywords{
				Words: []string{"scenario", "scenarios", "pilot"}, Stems: []string{"simulat", "experiment"},
				Phrases: []string{"what if", "what would happen", "sample size", "power analysis"},
			}},
			{"model_deployment", Keywords{Stems: []string{"deploy"}, Phrases: []string{"ship the model", "ship a model"}}},
			{"ml_training", Keywords{
				Words:   []string{"train", "trains", "trained", "training", "retrain", "retrains", "retrained", "retraining"},
				Phrases: []string{"fit a model", "fit the model", "build a model", "build the model"},
			}},
			{"monitoring", Keywords{
				Words: []string{"health", "healthy", "freshness", "alert", "alerts"}, Stems: []string{"monitor", "drift"},
				Phrases: []string{"data quality"},
			}},
			{"causal", Keywords{
				Words: []string{"why", "driver", "drivers", "driving", "effect", "effects", "fell", "fall", "falls", "falling", "dip", "dips", "dipped"},
				Stems: []string{"caus", "drop", "declin", "impact", "attribut"},
			}},
			{"comparative", Keywords{
				Words: []string{"versus", "vs"}, Stems: []string{"compar", "benchmark"},
				Phrases: []string{"better than", "worse than"},
			}},
			{"trend", Keywords{
				Words: []string{"outlook", "growth"}, Stems: []string{"trend", "forecast", "predict", "projection", "trajector"},
				Phrases: []string{"over time"},
			}},
		},
		Secondary: []IntentKeywords{
			{"exploratory", Keywords{Words: []string{"gap", "gaps"}, Stems: []string{"opportunit"}}},
		},
		Prefer: []AgentKeywords{
			{"prediction_synthesizer", Keywords{Stems: []string{"forecast", "predict", "projection"}}},
			{"resource_optimizer", Keywords{Stems: []string{"budget", "allocat", "spend"}}},
			{"heterogeneous_optimizer", Keywords{Words: []string{"decile", "deciles"}, Stems: []string{"segment", "heterogene"}}},
		},
		Gazetteers: []Gazetteer{
			{"brands", []Term{
				{"Kisqali", []string{"kisqali", "ribociclib"}},
				{"Fabhalta", []string{"fabhalta", "iptacopan"}},
				{"Verzenio", []string{"verzenio", "abemaciclib"}},
			}},
			// KPIs as seed 000's KPI_ROUTING_MAP names them. Hyphens separate words, so
			// "new-to-brand" is the phrase "new to brand".
			{"kpis", []Term{
				{"NRx", []string{"nrx", "new prescriptions", "new scripts"}},
				{"TRx", []string{"trx", "total prescriptions", "total scripts"}},
				{"NBRx", []string{"nbrx", "new to brand"}},
				{"model_accuracy", []string{"model accuracy", "accuracy"}},
				{"model_f1", []string{"model f1", "f1 score", "f1"}},
				{"match_rate", []string{"match rate"}},
				{"data_freshness", []string{"data freshness"}},
				{"MAU", []string{"mau", "monthly active users"}},
				{"DAU", []string{"dau", "daily active users"}},
				{"time_to_release", []string{"time to release"}},
				{"inference_latency", []string{"inference latency", "latency"}},
			}},
			{"regions", []Term{
				{"Midwest", []string{"midwest", "mid west", "midwestern"}},
				{"Northeast", []string{"northeast", "north east", "northeastern"}},
				{"South", []string{"south", "southern"}},
				{"West", []string{"west", "western"}},
			}},
		},
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
//     them; absent when there are none. "brands" also holds, as written, a capitalised name
//     the gazetteer does not know right after the word "brand" ("the brand Ozempic"), so that
//     the agents report it as a brand the data does not hold rather than answer about another;
//   - "mentions": capitalised names the gazetteers do not know standing where a brand could
//     ("for Ozempic", "Ozempic NRx", "against Plan"), as written; the agents name them when
//     they say which brand they analysed. See brandNames for what reads as a name;
//   - "time_period": "recent" unless the query names one ("last quarter", "past 6 weeks",
//     "last 2 years", "in 2019", …);
//   - "budget" (dollars, from "$2.5M"), "change_pct" (from "10%") and "effect_size" (from
//     "effect size 0.3" or "d = 0.3") when the query states them, and "preferred_agents" when
//     it asks for a forecast, a budget allocation or a segment split.
//
// For "What caused the drop in NRx for Kisqali in Midwest?" that is {"intent": "causal",
// "brands": ["Kisqali"], "kpis": ["NRx"], "regions": ["Midwest"], "time_period": "recent"},
// seed 000's example. ParseQuery is deterministic and safe for concurrent use.
func ParseQuery(q string) map[string]any {
	r := DefaultParserRules()
	return r.Parse(q)
}

// Parse turns a question into a parsed query by these rules, as ParseQuery describes: the
// intent, secondary intents and preferred agents from keyword rules, an entity list per
// gazetteer (the one keyed "brands" also keeping names it does not know, and "mentions"
// those it guesses at, as ParseQuery says), and the time period, budget, change and effect
// size the question states. It is deterministic and safe for concurrent use.
func (r *ParserRules) Parse(q string) map[string]any {
	if len(q) > MaxQueryBytes {
		q = q[:MaxQueryBytes]
	}
	toks, written := tokenize(q)
	out := map[string]any{"intent": r.DefaultIntent, "time_period": timePeriod(toks)}
	for _, ir := range r.Intents {
		if ir.match(toks) {
			out["intent"] = ir.Intent
			break
		}
	}
	var secondary []string
	for _, s := range r.Secondary {
		if out["intent"] != s.Intent && !slices.Contains(secondary, s.Intent) && s.match(toks) {
			secondary = append(secondary, s.Intent)
		}
	}
	if len(secondary) > 0 {
		out["secondary_intents"] = secondary
	}
	claims := make([][]string, len(r.Gazetteers)) // per gazetteer, token → the name that claimed it
	for i, g := range r.Gazetteers {
		claims[i] = claim(toks, g.Terms)
	}
	for i, g := range r.Gazetteers {
		names := firstSeen(claims[i])
		switch g.Key {
		case "brands":
			var guessed []string
			if names, guessed = r.brandNames(toks, written, claims); len(guessed) > 0 {
				out["mentions"] = guessed
			}
		case "regions":
			names = r.regionNames(toks, written, claims, i)
		}
		if len(names) > 0 {
			out[g.Key] = names
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
	for _, p := range r.Prefer {
		if p.match(toks) && !slices.Contains(preferred, p.Agent) {
			preferred = append(preferred, p.Agent)
		}
	}
	if len(preferred) > 0 {
		out["preferred_agents"] = preferred
	}
	return out
}

// tokenize splits q into lower-case words and the symbols $, % and =. For each token, written
// holds the word as q spells it when it starts with a capital letter and does not start a
// sentence (a name, most likely), else "".
func tokenize(q string) (toks, written []string) {
	var word, orig []rune
	sentence := true // the next word starts a sentence
	flush := func() {
		if len(word) > 0 {
			toks = append(toks, string(word))
			w := ""
			if !sentence && unicode.IsUpper(orig[0]) {
				w = string(orig)
			}
			written = append(written, w)
			word, orig, sentence = word[:0], orig[:0], false
		}
	}
	rs := []rune(q)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word, orig = append(word, unicode.ToLower(r)), append(orig, r)
		case r == '.' && len(word) == 0 && i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			word, orig = append(word, '0', '.'), append(orig, '0', '.') // .5 is 0.5
		case (r == '.' || r == ',') && len(word) > 0 && unicode.IsDigit(word[len(word)-1]) &&
			i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			if r == '.' {
				word, orig = append(word, r), append(orig, r)
			} // a thousands separator is dropped: 1,000 is 1000
		default:
			flush()
			switch r {
			case '$', '%', '=':
				toks, written = append(toks, string(r)), append(written, "")
			case '.', '!', '?':
				sentence = true
			}
		}
	}
	flush()
	return toks, written
}

// timePeriod finds the first time span the words name: "last|past|previous|prior|this" with
// an optional count and a unit (days, weeks, months, quarters, years), "year to date", "all
// time", "since launch", a quarter (q1–q4) or a calendar year ("in 2019": "year 2019"). It is
// "recent" when they name none.
func timePeriod(toks []string) string {
	for i, t := range toks {
		rest := toks[i+1:]
		switch {
		case t == "last" || t == "past" || t == "previous" || t == "prior" || t == "this":
			if len(rest) >= 2 {
				if n, err := strconv.Atoi(rest[0]); err == nil && n > 0 {
					switch rest[1] {
					case "day", "days":
						return "last " + strconv.Itoa(n) + " days"
					case "week", "weeks":
						return "last " + strconv.Itoa(n) + " weeks"
					case "month", "months":
						return "last " + strconv.Itoa(n) + " months"
					case "quarter", "quarters":
						return "last " + strconv.Itoa(n) + " quarters"
					case "year", "years":
						return "last " + strconv.Itoa(n) + " years"
					}
				}
			}
			if len(rest) >= 1 {
				switch rest[0] {
				case "year":
					if t == "this" { // the year so far, not the last 52 weeks
						return "year to date"
					}
					return "last year"
				case "week", "month", "quarter":
					return "last " + rest[0]
				}
			}
		case (t == "in" || t == "during" || t == "since") && len(rest) >= 1 && isYear(rest[0]):
			return "year " + rest[0]
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

// isYear reports whether word is a calendar year, 1990 to 2099.
func isYear(word string) bool {
	n, err := strconv.Atoi(word)
	return err == nil && len(word) == 4 && n >= 1990 && n <= 2099
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

// claim returns, for each word, the name of the term that mentions it there, or "". Longer
// phrases claim their words first, so "mid west" is never also "west".
func claim(toks []string, terms []Term) []string {
	type phrase struct {
		words []string
		name  string
	}
	var ps []phrase
	for _, t := range terms {
		for _, p := range t.Phrases {
			ps = append(ps, phrase{strings.Fields(p), t.Name})
		}
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
	return claimed
}

// firstSeen returns the names claimed, each once, in the order the words mention them.
func firstSeen(claimed []string) []string {
	var names []string
	for _, n := range claimed {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// brandNames returns the brands the question names, in the order it names them: those of the
// brands gazetteer, and a name the gazetteer does not know written right after the word
// "brand" ("the brand Ozempic"), as the question spells it; that one is a brand by the
// question's own word, and the agents report it as not in the data rather than answer about
// another. It also returns the names it only guesses at: a name the gazetteer does not know
// standing where a brand could — "for Ozempic", "Kisqali versus Ozempic", "Ozempic NRx" —
// but where a plan, a target, a region or a segment stands just as often ("against Plan",
// "for Southeast", "for Oncologists"). Those are mentions, not brands: a question that names
// no brand of the data says which it mentioned when it says which brand was analysed.
//
// A name is a word written with a capital that does not start a sentence, that no gazetteer
// claims, and that is neither one of the rules' keywords nor a common word (notName) nor has
// a digit ("Q3"). In a question all in lower case, or one that starts with the brand, nothing
// marks a name: the agents then say which brand they assumed.
func (r *ParserRules) brandNames(toks, written []string, claims [][]string) (brands, guessed []string) {
	owner := func(i int, key string) string { // the name a gazetteer of key claims word i for
		for g, c := range claims {
			if r.Gazetteers[g].Key == key && c[i] != "" {
				return c[i]
			}
		}
		return ""
	}
	claimed := func(i int) bool {
		return slices.ContainsFunc(claims, func(c []string) bool { return c[i] != "" })
	}
	add := func(names *[]string, n string) {
		if !slices.Contains(*names, n) {
			*names = append(*names, n)
		}
	}
	brand := make([]bool, len(toks)) // word i names a brand, known or not
	for i, t := range toks {
		if n := owner(i, "brands"); n != "" {
			brand[i] = true
			add(&brands, n)
			continue
		}
		w := written[i]
		if w == "" || claimed(i) || strings.ContainsFunc(w, unicode.IsDigit) || notName(t) || r.keyword(t) {
			continue
		}
		prev := ""
		if i > 0 {
			prev = toks[i-1]
		}
		switch {
		case prev == "brand": // "the brand Ozempic"
			brand[i] = true
			add(&brands, w)
		case i+1 < len(toks) && segmentNoun(toks[i+1]): // "for Medicare patients": a segment
		case brandAfter(prev) || // "for Ozempic"
			i+1 < len(toks) && owner(i+1, "kpis") != "" || // "Ozempic NRx"
			(prev == "and" || prev == "or") && i >= 2 && brand[i-2]: // "Kisqali and Ozempic"
			brand[i] = true
			add(&guessed, w)
		}
	}
	return brands, guessed
}

// regionNames returns the regions the question names, in the order it names them: those of the
// gazetteer at index g, and a place the gazetteer does not know, as the question spells it —
// a name after "in" ("in Southeast", "in the Pacific Northwest", "in New York") or next to the
// word "region" ("the Southeast region"), or joined by "and"/"or" to a region ("the Midwest
// and Southeast"). The agents then say the data has no such region rather than answer about
// another one. A name is as brandNames reads one; consecutive names are one place, and a name
// followed by a KPI ("in Ozempic NRx") or a segment noun is not a place.
func (r *ParserRules) regionNames(toks, written []string, claims [][]string, g int) []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	claimed := func(i int) bool {
		return slices.ContainsFunc(claims, func(c []string) bool { return c[i] != "" })
	}
	isName := func(i int) bool {
		w := written[i]
		return w != "" && !claimed(i) && !strings.ContainsFunc(w, unicode.IsDigit) && !notName(toks[i]) && !r.keyword(toks[i])
	}
	kpi := func(i int) bool {
		for k, c := range claims {
			if r.Gazetteers[k].Key == "kpis" && c[i] != "" {
				return true
			}
		}
		return false
	}
	region := make([]bool, len(toks)) // word i names a region, known or not
	for i := 0; i < len(toks); i++ {
		if n := claims[g][i]; n != "" {
			region[i] = true
			add(n)
			continue
		}
		if !isName(i) {
			continue
		}
		j := i + 1 // the place runs over words i to j-1
		for j < len(toks) && isName(j) {
			j++
		}
		prev, next := "", ""
		if i > 0 {
			prev = toks[i-1]
		}
		if j < len(toks) {
			next = toks[j]
		}
		if slices.ContainsFunc(toks[i:j], notPlace) {
			i = j - 1 // the whole country, an indication, a season: no region
			continue
		}
		place := prev == "in" || prev == "the" && i > 1 && toks[i-2] == "in" ||
			prev == "region" || next == "region" || next == "regions" ||
			(prev == "and" || prev == "or") && i >= 2 && region[i-2]
		if !place || j < len(toks) && (kpi(j) || segmentNoun(next)) {
			i = j - 1
			continue
		}
		for k := i; k < j; k++ {
			region[k] = true
		}
		add(strings.Join(written[i:j], " "))
		i = j - 1
	}
	return names
}

// notPlace reports whether word, capitalised after "in", names no region the data could lack:
// the whole country, which is every region ("in the United States"), an indication or a line
// of therapy ("in Breast Cancer", "in First Line"), a season ("in Summer"), or a common word
// of a title-case question ("In Recent Weeks", "in Total").
func notPlace(word string) bool {
	switch word {
	case "united", "states", "usa", "u", "s", "america", "nation", "national", "nationwide", "country", "countrywide", "overall", "total", "general", "aggregate",
		"cancer", "cancers", "tumor", "tumors", "tumour", "tumours", "disease", "indication", "indications", "line", "lines", "therapy", "treatment",
		"first", "second", "third", "adjuvant", "metastatic", "early", "advanced",
		"spring", "summer", "fall", "autumn", "winter", "holidays",
		"recent", "recently", "today", "yesterday":
		return true
	}
	return false
}

// brandAfter reports whether a name after word stands where a brand would: "for Ozempic".
func brandAfter(word string) bool {
	switch word {
	case "for", "of", "about", "versus", "vs", "against", "brand":
		return true
	}
	return false
}

// segmentNoun reports whether word, after a name, makes the name a segment of patients,
// prescribers or accounts rather than a brand: "for Medicare patients", "for Oncology
// prescribers", "for Kaiser accounts".
func segmentNoun(word string) bool {
	switch word {
	case "patient", "patients", "prescriber", "prescribers", "physician", "physicians", "doctor", "doctors",
		"hcp", "hcps", "plan", "plans", "payer", "payers", "member", "members", "lives", "segment", "segments",
		"channel", "channels", "account", "accounts", "customer", "customers", "practice", "practices",
		"clinic", "clinics", "hospital", "hospitals", "pharmacy", "pharmacies", "specialty", "specialties":
		return true
	}
	return false
}

// notName reports whether word is a common word that a question may capitalise ("For The
// West", "NRx for All brands"), or a proper name of this market that is never a brand: a
// payer or channel ("for Medicare"), a specialty ("for Oncology"), a prescriber type ("for
// HCPs"), a month or a day ("for March").
func notName(word string) bool {
	switch word {
	case "medicare", "medicaid", "commercial", "tricare", "va", "part", "managed", "government", "cash",
		"retail", "specialty", "mail", "ltc", "340b", "idn", "idns", "gpo", "gpos", "pbm", "pbms",
		"oncology", "hematology", "cardiology", "nephrology", "dermatology", "rheumatology", "endocrinology",
		"hcp", "hcps", "np", "nps", "pa", "pas", "kol", "kols", "md", "mds",
		"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
		"november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
		"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday":
		return true
	}
	switch word {
	case "a", "an", "the", "all", "any", "each", "every", "both", "this", "that", "these", "those",
		"our", "my", "your", "their", "its", "it", "us", "me", "we", "you", "them", "i",
		"of", "for", "in", "on", "at", "by", "to", "from", "with", "about", "and", "or", "versus", "vs", "against",
		"is", "are", "was", "were", "be", "did", "do", "does", "has", "have", "had", "can", "could", "will", "would", "should",
		"what", "why", "how", "where", "when", "which", "who", "show", "tell", "give", "find", "list",
		"next", "last", "past", "previous", "prior", "current",
		"week", "weeks", "month", "months", "quarter", "year", "ytd",
		"brand", "brands", "region", "regions", "market", "markets",
		"prescriber", "prescribers", "patients", "data", "model", "models":
		return true
	}
	return false
}

// keyword reports whether word is one of the rules' keywords: equal to a word, starting with
// a stem or part of a phrase of an intent, secondary intent or preferred agent rule.
func (r *ParserRules) keyword(word string) bool {
	var all []Keywords
	for _, ik := range r.Intents {
		all = append(all, ik.Keywords)
	}
	for _, ik := range r.Secondary {
		all = append(all, ik.Keywords)
	}
	for _, ak := range r.Prefer {
		all = append(all, ak.Keywords)
	}
	for _, k := range all {
		if slices.Contains(k.Words, word) || slices.ContainsFunc(k.Stems, func(s string) bool { return strings.HasPrefix(word, s) }) ||
			slices.ContainsFunc(k.Phrases, func(p string) bool { return slices.Contains(strings.Fields(p), word) }) {
			return true
		}
	}
	return false
}
