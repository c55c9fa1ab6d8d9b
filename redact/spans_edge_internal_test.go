package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// wholeText is what a rule's pattern does run over the whole text: every match the rule's Valid
// confirms replaced, the way String replaces them when it has no spans.
func (ru *rule) wholeText(s string) string {
	var b []byte
	last := 0
	for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
		if ru.valid != nil && !ru.valid(s[m[0]:m[1]]) {
			continue
		}
		b = append(b, s[last:m[0]]...)
		if ru.expand {
			b = ru.re.ExpandString(b, ru.repl, s, m)
		} else {
			b = append(b, ru.repl...)
		}
		last = m[1]
	}
	return string(append(b, s[last:]...))
}

// edgePieces are pieces of every built-in rule's shape next to what spans are cut at: ASCII
// bytes of every class, \b's word characters, runes of several widths, invalid UTF-8, runes
// (?i) folds to no ASCII letter (İ, ı, Å, ẞ, fullwidth letters), line ends of every kind.
var edgePieces = []string{
	// names and separators
	"token", "Token", "TOKEN", "tokens", "password", "passwd", "PASSWORD", "secret", "api_key", "apikey", "api-key",
	"access_key", "AccessKey", "privateKey", "x-api-key", "clientSecret", "PGPASSWORD", "secret_key", "SECRET_KEY",
	"access_token", "Pwd", "PWD", "_pwd", "-pwd", "MYSQL_PWD", "pwd", "db_", "a1-", "x_",
	";", "; ", ";\n", "=", "==", ":", " : ", "=\"", ":'", "\"", "'", "\\", "\\\"", "\\\\", "\\\n", "\\\r", "\\'",
	"\n", "\r\n", "\r", "\f", "\v", "\t", " ", "  ", ",", "&", "?", "#", "{", "}", "{a;b}", "[", "]", "<", ">",
	"/", "//", "@", "%", "+", "~", "^", "|", "`", "!", "$", "*", "(", ")", ".", "\x00", "\x7f", "\x0e", "\x0f",
	// values and prose
	"abc", "hunter22", "x", "12345678", "abcd", "Abcdefghijklmnopqrstuvwxyz", "0", "_", "-", "9_",
	"invalid ", "missing ", "bad ", "no ", "access ", "the ", "expired", "none", "required", "malformed",
	"[REDACTED:secret]", "[REDACTED", "page=2", "&page=2", "?access_token=", "&password=",
	// headers
	"Authorization", "authorization", "AUTHORIZATION", "proxy-", "Proxy-", "xproxy-", "proxy\r",
	"Bearer ", "bearer\t", "Basic ", "basic ", "dXNlcjpwYXNz", "dXNlcjpwYXNzd29yZA==", "Token ", "Digest ",
	"realm=\"a b\"", "=\"x\\\"y\"", "=\"", "=\"\"", "=\",\"", "\\/", "cookie", "Cookie: ", "Set-Cookie:", "sid=", "a=\\\"b\\\"",
	// URLs
	"https://", "postgres://", "h+t.p://", "user:pw@", "u:p@h", "example.com", "a@b.co", "x@2x.png",
	"hooks.slack.com/services/", "HOOKS.SLACK.COM/", "T0123ABCD/", "B0123ABCD/", "A0456/", "workflows/", "triggers/",
	"XXXXXXXXXXXXXXXXXXXXXXXX", "discord.com/api/webhooks/", "discordapp.com/api/v10/webhooks/", "123456789012345678/",
	"api.telegram.org/bot", "API.Telegram.org/file/bot", "123456789:", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "/sendMessage",
	// keys
	"-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
	"-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", "MIIEvQIBADANBg", "\\n",
	"sk-", "sk-proj-abcdefghijklmnop1234", "sk_live_", "whsec_", "ghp_" + strings.Repeat("a", 36), "AKIAIOSFODNN7EXAMPLE",
	"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.", "xoxb-1234567890", "AIza" + strings.Repeat("z", 35), "glpat-", "npm_", "hf_",
	// runes
	"é", "€", "😀", "\xff", "\xc3", "\xe2\x82", "\u0130", "\u0131", "\u212B", "\u00df", "\u1e9e", "\uff34\uff4f\uff4b", "\u00a0",
	"\u2028", "\u0085",
}

// edgeText is a random text of edgePieces, random bytes and random runs of a word character.
func edgeText(rnd *rand.Rand) string {
	var b strings.Builder
	for range 1 + rnd.IntN(30) {
		switch rnd.IntN(12) {
		case 0:
			b.WriteByte(byte(rnd.IntN(256)))
		case 1:
			b.WriteString(strings.Repeat(string("aZ9_"[rnd.IntN(4)]), 1+rnd.IntN(40)))
		default:
			b.WriteString(edgePieces[rnd.IntN(len(edgePieces))])
		}
	}
	return b.String()
}

// Each built-in rule, on its own, replaces in its spans what its pattern replaces run over the
// whole text — whatever rules came before it, which String's differential test cannot reach
// everywhere (an earlier rule replaces much of what a later one would see).
func TestSpansMatchWholeTextPerRule(t *testing.T) {
	r := MustNew(Config{})
	rnd := rand.New(rand.NewPCG(3, 4))
	n := 10000
	if testing.Short() {
		n = 1000
	}
	for range n {
		s := edgeText(rnd)
		for i := range r.rules {
			ru := &r.rules[i]
			if ru.spans == nil {
				continue
			}
			want := ru.wholeText(s)
			got := s
			if ru.may == nil || ru.may(s) {
				got = ru.replaceSpans(s)
			}
			if got != want {
				t.Fatalf("rule %d (%s) on %q:\n got %q\nwant %q (the pattern over the whole text)", i, ru.re, s, got, want)
			}
		}
	}
}

// The cheap tests and the spans read case as ASCII does, and String runs every pattern whole
// on text with a rune (?i) folds to an ASCII letter: only ſ and K, in the Unicode tables Go
// has. A later table with another would make String miss what the patterns match.
func TestOnlyLongSAndKelvinFoldToASCII(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < 0x80 && r != '\u017F' && r != '\u212A' {
				t.Errorf("(?i) folds %U to %q: String must run the patterns whole on text with it", r, f)
			}
		}
	}
}
