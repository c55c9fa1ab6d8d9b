package redact

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// Go's regexp runs its NFA over the whole text for a pattern it cannot start with a literal —
// (?i), \b, an alternation —, at a cost of hundreds of nanoseconds a byte for the built-in
// rules' patterns: 100 KB of text full of secrets took tens of milliseconds a rule. A rule with
// spans runs its pattern only over the parts of the text that can hold a match, and gets the
// same matches: each span holds whole every match it could hold, and starts where \b reads as
// it does in the whole text (at the text's start, or after a byte that is no word character).
// Spans are found in one pass, so the work stays linear in the text.

// spanFunc calls yield with spans [lo, hi) of s, lo increasing, that between them hold every
// match of a rule's pattern in s, each match whole in one. Spans that overlap are merged, and
// so hold whole each match that starts in them; spans that touch are not: a pwd's span ends at
// the ';' the next one starts at, and the pattern run over both would read on from each value
// to the end of the text for a '}' to close its '{' — time quadratic in the text, as when it
// runs over the whole text. The pattern must read a span as it reads the whole text: each hi is
// len(s) or at a byte that is no word character, and each lo is 0 or after one — or where no
// match can start with an assertion (pwdSpans' ';').
type spanFunc func(s string, yield func(lo, hi int))

// replaceSpans is String's work for a rule with spans: the pattern is run over each merged span.
func (ru *rule) replaceSpans(s string) string {
	var b []byte
	last := 0
	run := func(lo, hi int) {
		seg := s[lo:hi]
		for _, m := range ru.re.FindAllStringSubmatchIndex(seg, -1) {
			if ru.valid != nil && !ru.valid(seg[m[0]:m[1]]) {
				continue
			}
			if b == nil {
				b = make([]byte, 0, len(s))
			}
			b = append(b, s[last:lo+m[0]]...)
			if ru.expand {
				b = ru.re.ExpandString(b, ru.repl, seg, m)
			} else {
				b = append(b, ru.repl...)
			}
			last = lo + m[1]
		}
	}
	curLo, curHi := 0, -1
	ru.spans(s, func(lo, hi int) {
		if lo < curHi {
			curHi = max(curHi, hi)
			return
		}
		if curHi >= 0 {
			run(curLo, curHi)
		}
		curLo, curHi = lo, hi
	})
	if curHi >= 0 {
		run(curLo, curHi)
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// barrierSpans returns the spans of a pattern that no match of crosses a barrier: the text
// between barriers that passes may (nil passes all). A barrier is an ASCII byte that is no word
// character and that no part of the pattern matches (a ',' for most); a match lies between two.
// It returns nil when the pattern has no barrier, or an assertion about lines or the text's
// ends, which a span's ends would change.
func barrierSpans(re *regexp.Regexp, may func(string) bool) spanFunc {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil
	}
	var inMatch [128]bool
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			for c := range inMatch {
				inMatch[c] = inMatch[c] || in.MatchRune(rune(c))
			}
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0 {
				return nil
			}
		}
	}
	barrier := new([256]bool)
	some := false
	for c := range inMatch {
		if !inMatch[c] && !syntax.IsWordChar(rune(c)) {
			barrier[c], some = true, true
		}
	}
	if !some {
		return nil
	}
	return func(s string, yield func(lo, hi int)) {
		lo := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || barrier[s[i]] {
				if i > lo && (may == nil || may(s[lo:i])) {
					yield(lo, i)
				}
				lo = i + 1
			}
		}
	}
}

// isNameByte reports whether c may be part of a secret's name: [A-Za-z0-9_-].
func isNameByte(c byte) bool {
	return 'a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

func isWordByte(c byte) bool { return syntax.IsWordChar(rune(c)) }

// nameStart returns where the run of name bytes that ends at end starts. The byte before it,
// if any, is no name byte, so no word character either.
func nameStart(s string, end int) int {
	for end > 0 && isNameByte(s[end-1]) {
		end--
	}
	return end
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// secretKeys calls f, in order, with each ':' or '=' of s at a that follows a secret's name —
// blanks and a quote between them, as the key=value rules' separator allows — and with lo, the
// start of the run of name bytes the name ends. Names are found as hasSecretKey finds them.
func secretKeys(s string, f func(lo, a int)) {
	for i := 0; i < len(s); i++ {
		j := strings.IndexAny(s[i:], ":=")
		if j < 0 {
			return
		}
		i += j
		k := i
		for k > 0 && isSpace(s[k-1]) {
			k--
		}
		if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
			k--
		}
		if endsWithSecretWord(s[:k]) {
			f(nameStart(s, k), i)
		}
	}
}

// nextStop finds, for positions asked in increasing order, the first byte at or after each that
// stop holds, looking at each byte of s once.
type nextStop struct {
	s        string
	stop     func(byte) bool
	seen     bool
	from, at int // s[from:at] holds no stop byte; at is one, or len(s)
}

func (n *nextStop) after(p int) int {
	if !n.seen || p < n.from || p > n.at {
		n.from, n.at, n.seen = p, p, true
		for n.at < len(n.s) && !n.stop(n.s[n.at]) {
			n.at++
		}
	}
	return n.at
}

// quotedSecretSpans are the spans of a key=value secret whose value is quoted by q: from the
// name to where the value must end, at a q or a line break that no backslash escapes.
func quotedSecretSpans(q byte) spanFunc {
	return func(s string, yield func(lo, hi int)) {
		secretKeys(s, func(lo, a int) {
			p := skipSpace(s, a+1)
			if p == len(s) || s[p] != q {
				return
			}
			// No span's scan passes the next one's opening quote, which follows a ':', an '='
			// or a blank, never a backslash: each byte is looked at once.
			for p++; p < len(s) && s[p] != q && s[p] != '\n'; p++ {
				if s[p] == '\\' {
					if p+1 == len(s) || s[p+1] == '\n' {
						break
					}
					p++
				}
			}
			yield(lo, p)
		})
	}
}

// bareSecretSpans are the spans of a bare key=value secret: from the words of prose that may
// come before its name (a qualifier and up to two words, "invalid access token:") to the first
// blank, quote, ',' or ';' of its value.
func bareSecretSpans(s string, yield func(lo, hi int)) {
	end := nextStop{s: s, stop: func(c byte) bool { return isSpace(c) || c == '"' || c == '\'' || c == ',' || c == ';' }}
	secretKeys(s, func(lo, a int) {
		p := skipSpace(s, a+1)
		if p < len(s) && (s[p] == '"' || s[p] == '\'') {
			p++
		}
		yield(proseStart(s, lo), end.after(p))
	})
}

// proseStart returns where a match that ends its prose before the name at lo may start: a
// qualifier then up to two words, each a run of letters followed by blanks. A word that a word
// character comes right before can be neither.
func proseStart(s string, lo int) int {
	for range 3 {
		j := lo
		for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
			j--
		}
		k := j
		for k > 0 && 'a' <= s[k-1]|0x20 && s[k-1]|0x20 <= 'z' {
			k--
		}
		if j == lo || k == j || k > 0 && isWordByte(s[k-1]) {
			break
		}
		lo = k
	}
	return lo
}

// pwdSpans are the spans of a connection string's or a prefixed pwd: from the ';' or the run of
// name bytes before it to the end of its value, which a {braced} part may lengthen.
//
// Ends are looked for from two kinds of place, each met in increasing order: the start of a
// value, and the byte after a braced part's '}'. A pwd inside a braced part is met after the
// search from its '}', and its value starts before that '}': with one nextStop for both, each
// such pwd would send it back, and the value after the '}' would be read again for the next,
// in time quadratic in the text.
func pwdSpans(s string, yield func(lo, hi int)) {
	stop := func(c byte) bool { return isSpace(c) || c == '"' || c == '\'' || c == ';' }
	end := nextStop{s: s, stop: stop}
	braced := nextStop{s: s, stop: stop}
	brace := nextStop{s: s, stop: func(c byte) bool { return c == '}' || c == '\n' }}
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return
		}
		i += j
		k := i
		for k > 0 && isSpace(s[k-1]) {
			k--
		}
		if !endsWithPwd(s[:k]) {
			continue
		}
		lo := k - len("pwd")
		if c := s[lo-1]; c == '_' || c == '-' {
			lo = nameStart(s, lo)
		} else {
			// ";\s*pwd": the match starts at the ';', whatever comes before it (the other
			// alternative starts with \b and a letter or digit, not at a ';').
			for isSpace(s[lo-1]) {
				lo--
			}
			lo--
		}
		p := skipSpace(s, i+1)
		if p < len(s) && s[p] == '{' {
			if c := brace.after(p + 1); c < len(s) && s[c] == '}' {
				yield(lo, braced.after(c+1))
				continue
			}
		}
		if p < len(s) && (s[p] == '"' || s[p] == '\'') {
			// A quoted value (it must be, to hold a ';'): to its closing quote, on its line.
			if c := closingQuote(s, p); c >= 0 {
				yield(lo, c+1)
				continue
			}
		}
		yield(lo, end.after(p))
	}
}

// closingQuote returns the index of the quote that closes the one at s[q], on its line: for a
// double quote, past backslash escapes; or -1 if the line has none.
func closingQuote(s string, q int) int {
	for i := q + 1; i < len(s) && s[i] != '\n'; i++ {
		switch {
		case s[q] == '"' && s[i] == '\\':
			i++
		case s[i] == s[q]:
			return i
		}
	}
	return -1
}

// authorizationSpans are the spans of an Authorization or Proxy-Authorization header: from its
// name to where its value must end (authValueEnd).
func authorizationSpans(s string, yield func(lo, hi int)) {
	line := nextStop{s: s, stop: func(c byte) bool { return c == '\n' }}
	names := newFoldIndex(s, "authorization")
	prevHi := -1
	for i := 0; ; i++ {
		a := names.from(i)
		if a < 0 {
			return
		}
		i = a
		lo := a
		if a >= 6 && hasSuffixFoldASCII(s[:a], "proxy-") && (a == 6 || !isWordByte(s[a-7])) {
			lo = a - 6
		} else if a > 0 && isWordByte(s[a-1]) {
			continue // no \b before the name
		}
		p := a + len("authorization")
		if p < len(s) && (s[p] == '"' || s[p] == '\'') {
			p++
		}
		p = skipSpace(s, p)
		if p == len(s) || s[p] != ':' && s[p] != '=' {
			continue
		}
		p = skipSpace(s, p+1)
		if p < len(s) && s[p] == '[' {
			p = skipSpace(s, p+1) // an http.Header's list of values, as JSON or a Go dump
		}
		if p < len(s) && (s[p] == '"' || s[p] == '\'') {
			p++
		}
		var hi int
		if p < prevHi {
			// Inside the last value, which authValueEnd has read: the end of the line bounds
			// this one, with no second reading of the same bytes.
			hi = max(prevHi, line.after(p))
		} else {
			hi = authValueEnd(s, p)
		}
		prevHi = hi
		yield(lo, hi)
	}
}

// authValueEnd returns where an authValue that starts at p must end: its units and the blanks
// between them read as far as they go, so that no match is longer.
func authValueEnd(s string, p int) int {
	for p < len(s) {
		switch c := s[p]; {
		case c == '=' && p+1 < len(s) && s[p+1] == '"':
			if q := quotedParamEnd(s, p+2); q >= 0 {
				p = q
			} else {
				p++ // an '=' alone; the '"' then ends the value
			}
		case c == '\\':
			if p+1 < len(s) && (s[p+1] == '"' || s[p+1] == '\\' || s[p+1] == '/') {
				p += 2
			} else {
				return p
			}
		case c == ' ' || c == '\t':
			p++
		case isSpace(c) || c == '"' || c == '\'' || c == ']':
			return p
		default:
			p++
		}
	}
	return p
}

// quotedParamEnd returns the end of a quoted parameter's text that starts at p, after its
// closing quote, or -1 if it is none: authUnit's ="…".
func quotedParamEnd(s string, p int) int {
	if p < len(s) && s[p] == '"' {
		return p + 1
	}
	if p == len(s) || isSpace(s[p]) || strings.IndexByte("\\,:}]", s[p]) >= 0 {
		return -1
	}
	for ; p < len(s); p++ {
		switch s[p] {
		case '"':
			return p + 1
		case '\r', '\n':
			return -1
		case '\\':
			if p+1 == len(s) || s[p+1] == '\n' {
				return -1
			}
			p++
		}
	}
	return -1
}

// foldIndex finds a lower-case ASCII word that starts with a letter, in any case, in s: it
// looks for the first letter in either case with IndexByte, which skips the bytes between at
// memory speed, and keeps where each case is next, so that searches from increasing positions
// look at each byte once. The zero value is not ready: use newFoldIndex.
type foldIndex struct {
	s, w                 string
	nextLower, nextUpper int // where w's first letter is next in lower and upper case, or len(s)
}

func newFoldIndex(s, w string) *foldIndex {
	return &foldIndex{s: s, w: w, nextLower: -1, nextUpper: -1}
}

// from returns the index of the first instance of the word in s[i:], or -1.
func (f *foldIndex) from(i int) int {
	s, w := f.s, f.w
	for i+len(w) <= len(s) {
		if f.nextLower < i {
			f.nextLower = nextByte(s, i, w[0])
		}
		if f.nextUpper < i {
			f.nextUpper = nextByte(s, i, w[0]&^0x20)
		}
		i = min(f.nextLower, f.nextUpper)
		if i+len(w) > len(s) {
			return -1
		}
		j := 1
		for j < len(w) && s[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return i
		}
		i++
	}
	return -1
}

// nextByte returns the index of the first c in s[i:], or len(s).
func nextByte(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return len(s)
}
