package redact_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupehq/troupe/redact"
)

// String runs each built-in pattern only over the parts of the text that can hold one of its
// matches; what it returns is what the patterns return run over the whole text. Texts made of
// pieces of every rule's shape — names, separators, quotes, escapes, line breaks, the runes
// (?i) folds to ASCII letters — check that where FuzzString's random bytes rarely reach.
func TestStringMatchesPatterns(t *testing.T) {
	pieces := []string{
		"token", "Token", "TOKEN", "password", "api_key", "x-api-key", "clientSecret", "PGPASSWORD", "secret_key",
		"Pwd", "_pwd", "MYSQL_PWD", "pwd", ";", "; ", "=", ":", " : ", "=\"", "\"", "'", "\\", "\\\"", "\\\\", "\n", "\r\n",
		" ", "  ", "\t", ",", "&", "?", "#", "{", "}", "[", "]", "<", ">", "/", "abc", "hunter22", "x", "12345678",
		"invalid ", "missing ", "access ", "expired", "none", "Authorization", "authorization", "proxy-", "Proxy-", "x",
		"Bearer ", "Basic ", "dXNlcjpwYXNz", "Token ", "Digest ", "realm=\"a b\"", "cookie", "Set-Cookie", "sid=", "; ",
		"https://", "postgres://", "user:pw@", "@", "example.com", "a@b.co", "-----BEGIN PRIVATE KEY-----",
		"-----END PRIVATE KEY-----", "MIIEvQIBADANBg", "sk-", "sk-proj-abcdefghijklmnop1234", "ghp_" + strings.Repeat("a", 36),
		"AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.", "xoxb-1234567890", "AIza" + strings.Repeat("z", 35),
		"hooks.slack.com/services/", "T0123ABCD/", "B0123ABCD/", "XXXXXXXXXXXXXXXXXXXXXXXX", "discord.com/api/webhooks/",
		"123456789012345678/", "api.telegram.org/bot", "123456789:", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "/sendMessage",
		"\r", "\f", "\\/", "=\"\"", "\u212A", "\u017F", "to\u212Aen", "ba\u017Fic ", "é", "\xff", "_", "-", "0", "[REDACTED:secret]", "[REDACTED", "access_token=", "page=2",
	}
	r := redact.MustNew(redact.Config{})
	rnd := rand.New(rand.NewPCG(1, 2))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for range n {
		var b strings.Builder
		for range 1 + rnd.IntN(40) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := r.String(s), patternsAlone(s); got != want {
			t.Fatalf("String(%q)\n got %q\nwant %q (the patterns over the whole text)", s, got, want)
		}
	}
}
