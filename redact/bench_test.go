package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/troupehq/troupe/redact"
)

// secretDense is about n bytes of text that is mostly secrets, each of another shape and with
// other characters than the one before, separated by a few words of prose: a log full of
// credentials, the worst case for a redactor, which has something to replace everywhere.
func secretDense(n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	seed := uint32(1)
	rnd := func(k int, alphabet string) string {
		b := make([]byte, k)
		for i := range b {
			seed = seed*1664525 + 1013904223
			b[i] = alphabet[int(seed>>24)%len(alphabet)]
		}
		return string(b)
	}
	upper := alnum[:26] + alnum[52:]
	shapes := []func() string{
		func() string { return "Authorization: Bearer " + rnd(40, alnum) + "\n" },
		func() string { return "Authorization: Basic dXNlcjpwYXNz" + "\n" },
		func() string { return "Authorization: Token " + rnd(24, alnum) + "\n" },
		func() string {
			return "postgres://app:" + rnd(12, alnum) + "@db-" + rnd(4, "abcdef") + ".internal:5432/app"
		},
		func() string { return "sk-proj-" + rnd(48, alnum) },
		func() string { return "AKIA" + rnd(16, upper) },
		func() string { return "ghp_" + rnd(36, alnum) },
		func() string { return "glpat-" + rnd(20, alnum) },
		func() string { return "xoxb-" + rnd(12, "0123456789") + "-" + rnd(24, alnum) },
		func() string { return "AIza" + rnd(35, alnum) },
		func() string { return "eyJhbGciOiJIUzI1NiJ9.eyJ" + rnd(40, alnum) + "." + rnd(43, alnum) },
		func() string { return "sk_live_" + rnd(24, alnum) },
		func() string { return "Cookie: sid=" + rnd(20, alnum) + "; theme=dark\n" },
		func() string { return "GET /cb?access_token=" + rnd(20, alnum) + "&page=2 HTTP/1.1\n" },
		func() string { return "token=" + rnd(16, alnum) + "&page=3" },
		func() string { return `{"password": "` + rnd(14, alnum) + `", "user": "bob"}` },
		func() string { return "export DB_PASSWORD=" + rnd(16, alnum) + "\n" },
		func() string { return "Server=db;Uid=sa;Pwd=" + rnd(10, alnum) + ";Database=x" },
		func() string { return strings.ToLower(rnd(8, alnum[:26])) + "@example.com" },
		func() string {
			return "https://hooks.slack.com/services/T" + rnd(8, upper) + "/B" + rnd(8, upper) + "/" + rnd(24, alnum)
		},
		func() string {
			return "https://discord.com/api/webhooks/" + rnd(18, "0123456789") + "/" + rnd(68, alnum+"_-")
		},
		func() string {
			return "https://api.telegram.org/bot" + rnd(9, "0123456789") + ":AA" + rnd(33, alnum) + "/sendMessage"
		},
		func() string {
			return "-----BEGIN RSA PRIVATE KEY-----\n" + rnd(64, alnum) + "\n" + rnd(64, alnum) + "\n-----END RSA PRIVATE KEY-----\n"
		},
	}
	prose := []string{" then ", ", see ", " in the log: ", " was sent by ", "; retry with ", " (old) "}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(shapes[i%len(shapes)]())
		b.WriteString(prose[i%len(prose)])
	}
	return b.String()
}

// BenchmarkSecretDense: 100 KB that is mostly secrets of every built-in shape, separated by
// short prose. Text with few secrets costs little (the rules' cheap tests skip it); this is
// what a redactor pays when every rule has matches everywhere.
func BenchmarkSecretDense(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := secretDense(100_000)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(s)
	}
}

// BenchmarkProse: 100 KB of ordinary text with a secret or two: the common case.
func BenchmarkProse(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	line := "the agent answered the question and the reviewer approved it after 3 rounds; see https://example.com/runs/3f2a1b9c for details\n"
	s := strings.Repeat(line, 100_000/len(line)) + fmt.Sprint("password: hunter22 ", "jane@example.com")
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(s)
	}
}

// BenchmarkManyAuthorizationNames: "authorization:" many times (100 KB), each the start of a
// header whose value runs to the end of the text. The rule looks for the name with IndexByte
// and remembers where the next 'a' and 'A' are, or it would look for an 'A' to the end of the
// text from every name, in time quadratic in its length.
func BenchmarkManyAuthorizationNames(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := strings.Repeat("authorization:", 100_000/14)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(s)
	}
}
