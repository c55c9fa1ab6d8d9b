package route

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// normalize prepares text for pattern matching. Non-ASCII text is first brought to Unicode
// NFKC, so that a decomposed "cafe\u0301" is the composed "café", and full-width "ｑｕｉｚ",
// the ligature "ﬁ" and a no-break space are "quiz", "fi" and a space. NFKC rather than NFC
// because a trigger is a search for what someone typed, not an identity: the forms NFKC
// merges are the same words to a reader, and phones, input methods and PDF copies produce
// them (Unicode recommends NFKC with case folding for such caseless matching, UAX #31). What
// NFKC loses — "x²" reads as "x2" — does not matter to a trigger. Then every rune is
// case-folded (so "K", "k" and the Kelvin sign are one letter), apostrophe look-alikes become
// ', and runs of white space become one space, trimmed at both ends. The result is valid
// UTF-8 even when s is not.
//
// Patterns and messages pass through the same function once each, so text that is
// canonically or compatibly equivalent normalizes to the same bytes; the result is not
// itself guaranteed to be NFKC (folding can yield a combining mark), and need not be.
//
// ASCII text is already NFKC, so it skips norm entirely; ASCII text that is already
// normalized, as most written patterns are, is returned as is, without allocating.
func normalize(s string) string {
	if ascii, normal := scanASCII(s); normal {
		return s
	} else if !ascii {
		// Invalid bytes become U+FFFD first: NFKC passes them through, and how it segments
		// the text around one depends on what follows, so a pattern and a message holding
		// the same bytes could normalize differently.
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		s = norm.NFKC.String(s) // returns s itself when it is already NFKC
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case isApostrophe(r):
			r = '\''
		default:
			r = fold(r)
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// scanASCII reports whether s is ASCII and whether it is also already normalized: no
// upper-case letter, no white space but single ' ' between other characters.
func scanASCII(s string) (ascii, normal bool) {
	normal = len(s) == 0 || (s[0] != ' ' && s[len(s)-1] != ' ')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return false, false
		case 'A' <= c && c <= 'Z', c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			normal = false
		case c == ' ' && i > 0 && s[i-1] == ' ':
			normal = false
		}
	}
	return true, normal
}

// isApostrophe reports whether r is typed for an apostrophe: phones and word processors turn
// "what's" into "what’s", and a trigger for one must match the other.
func isApostrophe(r rune) bool {
	switch r {
	case '\'', '\u2018', '\u2019', '\u201B', '\u02BC', '\u2032', '\uFF07':
		return true
	}
	return false
}

// fold maps r to one representative of its Unicode simple-fold orbit: the lower-case
// letter for an orbit holding an ASCII letter (so ASCII text folds without a lookup, and
// the Kelvin sign and long s become k and s), else the orbit's smallest rune.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	if 'A' <= least && least <= 'Z' {
		least += 'a' - 'A'
	}
	return least
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// containsWords reports whether pattern occurs in text at word boundaries; both are
// normalized. As with a regexp's \b, the boundary is checked only on a side where the pattern
// ends in a word character: "why" is not found in "somewhy", "next?" needs nothing after it.
func containsWords(text, pattern string) bool {
	if pattern == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(pattern)
	last, _ := utf8.DecodeLastRuneInString(pattern)
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], pattern)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(pattern)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (!isWord(first) || start == 0 || !isWord(before)) &&
			(!isWord(last) || end == len(text) || !isWord(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		from = start + size
	}
	return false
}

// jsonEqual reports whether a and b encode to the same JSON value: numbers compare by value
// (1, int64(1), 1.0 and json.Number("1") are equal), strings and booleans exactly, objects
// key by key. Values with no JSON encoding (NaN, functions, channels) equal nothing.
func jsonEqual(a, b any) bool {
	return encodable(a) && encodable(b) && jsonvalue.Equal(a, b)
}

// encodable reports whether v has a JSON encoding.
func encodable(v any) bool {
	_, err := json.Marshal(v)
	return err == nil
}

// jsonText renders a When value for a reason sentence.
func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "(not JSON)"
	}
	return string(data)
}
