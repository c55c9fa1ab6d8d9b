package redact_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/troupehq/troupe/redact"
)

// A PGP private key block ("-----BEGIN PGP PRIVATE KEY BLOCK-----"), which the private_key
// pattern matches, is redacted: the cheap test in front of the pattern must not look for
// "PRIVATE KEY-----", which a block's markers do not hold.
func TestPGPPrivateKeyBlock(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	for _, tt := range []struct{ in, want string }{
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGX0abcBCAC7\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\n",
			"[REDACTED:private_key]\n"},
		{"key: -----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGX0abcBCAC7", "key: [REDACTED:private_key]"},
	} {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, want := r.String(tt.in), patternsAlone(tt.in); got != want {
			t.Errorf("String(%q) = %q, the patterns alone %q", tt.in, got, want)
		}
	}
}

// growth returns how many times longer String takes on text(8n) than on text(n), the fastest of
// five runs of each: about 8 when the work is linear, 64 when it is quadratic.
func growth(r *redact.Redactor, text func(n int) string, n int) float64 {
	timeOf := func(s string) time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			t0 := time.Now()
			r.String(s)
			best = min(best, time.Since(t0))
		}
		return max(best, time.Microsecond)
	}
	return float64(timeOf(text(8*n))) / float64(timeOf(text(n)))
}

// String's time grows linearly with texts made to make a span finder read bytes again: a
// pwd's {braced} value sends the end of its span past the '=' of pwds inside the braces,
// whose spans end before it, and so on in turn.
func TestSpansLinearAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	r := redact.MustNew(redact.Config{})
	texts := map[string]func(n int) string{
		"pwd braces then a long value": func(n int) string {
			return "_pwd={" + strings.Repeat("a_pwd={ a_pwd=x ", n) + "}" + strings.Repeat("y", 16*n)
		},
		"pwd braces, no close": func(n int) string {
			return strings.Repeat("a_pwd={ a_pwd=x ", n) + strings.Repeat("y", 16*n)
		},
		"authorization in values": func(n int) string {
			return strings.Repeat(`authorization: ="x authorization: x\" `, n) + strings.Repeat("y", 16*n)
		},
		"quoted secrets in quoted secrets": func(n int) string {
			return strings.Repeat(`token="token=\"token: \"`, n) + strings.Repeat("y", 16*n)
		},
		// Each ";pwd=" span starts where the last one ends, at its ';'; were they run as one, the
		// pattern would read on from each value to the end of the text for a '}' that could
		// close its '{' (the braced alternative, which comes first), the work quadratic.
		"pwd after pwd, each braced and open": func(n int) string {
			return "a_pwd={x" + strings.Repeat(";pwd={x", n)
		},
		"bare secrets, prose": func(n int) string {
			return strings.Repeat("invalid bad token token: token=", n) + strings.Repeat("y", 16*n)
		},
	}
	for name, text := range texts {
		// Not 20: on a loaded machine (other test binaries running beside this one) linear
		// texts read 22 to 25 times; a quadratic one reads near 64.
		if g := growth(r, text, 1000); g > 32 {
			t.Errorf("%s: 8 times the text took %.1f times as long", name, g)
		}
	}
}

// String returns what the patterns alone return on texts of every rule's pieces cut where
// spans are cut: next to barrier bytes of every class, word characters (which change what \b
// reads at a span's edge), runes of every width, invalid UTF-8, \r\n, the end of the text, and
// runes (?i) folds to no ASCII letter; with caller patterns after the built-in rules.
func TestStringMatchesPatternsAtEdges(t *testing.T) {
	pieces := []string{
		"token", "Token", "TOKEN", "password", "passwd", "api_key", "api-key", "AccessKey", "x-api-key", "clientSecret",
		"PGPASSWORD", "secret_key", "access_token", "Pwd", "_pwd", "-pwd", "MYSQL_PWD", "pwd", "db_", "a1-",
		";", "; ", "=", ":", " : ", "=\"", ":'", "\"", "'", "\\", "\\\"", "\\\\", "\\\n", "\\\r", "\n", "\r\n", "\r",
		"\f", "\v", "\t", " ", ",", "&", "?", "#", "{", "}", "{a;b c}", "[", "]", "<", ">", "/", "@", "%", "+", "~",
		"^", "|", "`", "!", "*", ".", "\x00", "\x7f", "abc", "hunter22", "x", "12345678", "Abcdefghijklmnopqrstuvwxyz",
		"0", "_", "-", "invalid ", "missing ", "bad ", "access ", "expired", "none", "[REDACTED:secret]", "[REDACTED",
		"&page=2", "?access_token=", "Authorization", "authorization", "proxy-", "Proxy-", "xproxy-", "Bearer ",
		"Basic ", "dXNlcjpwYXNz", "dXNlcjpwYXNzd29yZA==", "Token ", "realm=\"a b\"", "=\"x\\\"y\"", "=\"\"", "=\",\"",
		"\\/", "cookie", "Set-Cookie: ", "sid=", "https://", "user:pw@", "example.com", "a@b.co", "x@2x.png",
		"hooks.slack.com/services/", "T0123ABCD/", "B0123ABCD/", "triggers/T0/1/", "XXXXXXXXXXXXXXXXXXXXXXXX",
		"discord.com/api/webhooks/", "123456789012345678/", "api.telegram.org/bot", "123456789:",
		"AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", "MIIEvQIBADANBg", "\\n",
		"sk-proj-abcdefghijklmnop1234", "ghp_" + strings.Repeat("a", 36), "AKIAIOSFODNN7EXAMPLE", "xoxb-1234567890",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.", "AIza" + strings.Repeat("z", 35),
		"é", "€", "😀", "\xff", "\xc3", "\xe2\x82", "\u0130", "\u0131", "\u212B", "\u00df", "\u1e9e", "\uff34", "\u00a0",
	}
	r := redact.MustNew(redact.Config{})
	withCaller := redact.MustNew(redact.Config{Patterns: []string{`(?i)\btoken\b`, `x{3,}`}})
	caller := []*regexp.Regexp{regexp.MustCompile(`(?i)\btoken\b`), regexp.MustCompile(`x{3,}`)}
	rnd := rand.New(rand.NewPCG(5, 6))
	n := 6000
	if testing.Short() {
		n = 600
	}
	for range n {
		var b strings.Builder
		for range 1 + rnd.IntN(40) {
			switch rnd.IntN(10) {
			case 0:
				b.WriteByte(byte(rnd.IntN(256)))
			case 1:
				b.WriteString(strings.Repeat(string("aZ9_"[rnd.IntN(4)]), 1+rnd.IntN(20)))
			default:
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
		}
		s := b.String()
		want := patternsAlone(s)
		if got := r.String(s); got != want {
			t.Fatalf("String(%q)\n got %q\nwant %q (the patterns over the whole text)", s, got, want)
		}
		for _, re := range caller {
			want = re.ReplaceAllLiteralString(want, redact.DefaultReplacement)
		}
		if got := withCaller.String(s); got != want {
			t.Fatalf("String(%q) with caller patterns\n got %q\nwant %q", s, got, want)
		}
	}
}
