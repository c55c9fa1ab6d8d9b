package route

import (
	"encoding/json"
	"github.com/troupehq/troupe/internal/jsonvalue"
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalize prepares text for pattern matching: every rune is case-folded (to the smallest
// rune of its Unicode fold orbit, so "K", "k" and the Kelvin sign are one letter), apostrophe
// look-alikes become ', and runs of white space become one space, trimmed at both ends. The
// result is valid UTF-8 even when s is not.
func normalize(s string) string {
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

// isApostrophe reports whether r is typed for an apostrophe: phones and word processors turn
// "what's" into "what’s", and a trigger for one must match the other.
func isApostrophe(r rune) bool {
	switch r {
	case '\'', '\u2018', '\u2019', '\u201B', '\u02BC', '\u2032', '\uFF07':
		return true
	}
	return false
}

func fold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
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
