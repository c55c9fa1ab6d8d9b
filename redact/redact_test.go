package redact_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe/redact"
)

func TestString(t *testing.T) {
	r := redact.MustNew(redact.Config{Patterns: []string{`\bMRN-\d{6}\b`}})
	tests := []struct{ in, want string }{
		{"Authorization: Bearer abc.DEF-123_456~xyz=", "Authorization: [REDACTED:bearer]"},
		{"key sk-proj-abcdefghijklmnop1234 here", "key [REDACTED:api_key] here"},
		// Real keys' bodies mix '_' and '-': redacted whole, not in part.
		{`{"error":"Incorrect API key provided: sk-proj-AbC_dEf-GhIjKlMnOpQrStUvWxYz0123456789"}`, `{"error":"Incorrect API key provided: [REDACTED:api_key]"}`},
		{"key sk-proj-AAAAAAAAAAAAAAAAAAAA_x-yyy end", "key [REDACTED:api_key] end"},
		{"x-api-key: sk-ant-api03-AbCdEf_GhIj-KlMnOpQrStUvWx-yz0123456789-AA.", "x-api-key: [REDACTED:api_key]."},
		{"sk-svcacct-Ab_Cd-EfGhIjKlMnOpQrStUvWxYz", "[REDACTED:api_key]"},
		{"uses sk-learn-style names and scikit-learn", "uses sk-learn-style names and scikit-learn"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws [REDACTED:api_key]"},
		{"gh ghp_" + strings.Repeat("a", 36), "gh [REDACTED:api_key]"},
		{"google AIza" + strings.Repeat("B", 35), "google [REDACTED:api_key]"},
		{`{"api_key": "12345678"}`, `{"api_key": "[REDACTED:secret]"}`},
		{"password=hunter22 rest", "password=[REDACTED:secret] rest"},
		{"mail jane.doe+x@example.co.uk now", "mail [REDACTED:email] now"},
		{"patient MRN-123456 seen", "patient [REDACTED] seen"},
		{"nothing to see, token 42", "nothing to see, token 42"},
		{"score 0.8 for a@b", "score 0.8 for a@b"}, // not an address: no top-level domain
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValue(t *testing.T) {
	r := redact.MustNew(redact.Config{Fields: []string{"user.ssn", "*.notes", "**.internal.id"}, Replacement: "***"})
	var in any
	if err := json.Unmarshal([]byte(`{
		"user": {"ssn": "123-45-6789", "name": "Jane", "email": "jane@example.com", "Password": "pw"},
		"a": {"notes": "private", "keep": 1},
		"deep": {"x": {"internal": {"id": 7, "ok": true}}},
		"list": [{"ssn": "no path match"}, "bob@example.org"],
		"jane@example.com": "key"
	}`), &in); err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(in)
	got := r.Value(in)
	want := map[string]any{
		"user":             map[string]any{"ssn": "***", "name": "Jane", "email": "[REDACTED:email]", "Password": "***"},
		"a":                map[string]any{"notes": "***", "keep": 1.0},
		"deep":             map[string]any{"x": map[string]any{"internal": map[string]any{"id": "***", "ok": true}}},
		"list":             []any{map[string]any{"ssn": "no path match"}, "[REDACTED:email]"},
		"[REDACTED:email]": "key",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Value (-want +got):\n%s", diff)
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("input modified:\n%s\n%s", before, after)
	}
	// Array elements are transparent to field paths.
	r2 := redact.MustNew(redact.Config{Fields: []string{"users.email"}, NoDefaults: true})
	if got := r2.Value(map[string]any{"users": []any{map[string]any{"email": "x"}, map[string]any{"email": "y"}}}); !cmp.Equal(got,
		map[string]any{"users": []any{map[string]any{"email": "[REDACTED]"}, map[string]any{"email": "[REDACTED]"}}}) {
		t.Errorf("array elements: %v", got)
	}
}

// A value taken out of its document is redacted as it would be in place: field paths match
// through the path it was found at.
func TestValueAt(t *testing.T) {
	r := redact.MustNew(redact.Config{Fields: []string{"user.ssn", "patient"}})
	tests := []struct {
		path []string
		in   any
		want any
	}{
		{[]string{"user", "ssn"}, "123-45-6789", "[REDACTED]"},  // the field itself
		{[]string{"User", "SSN"}, "123-45-6789", "[REDACTED]"},  // names match case-insensitively
		{[]string{"patient", "name"}, "Jane Roe", "[REDACTED]"}, // below a redacted field
		{[]string{"user"}, map[string]any{"ssn": "1", "n": 2.0}, map[string]any{"ssn": "[REDACTED]", "n": 2.0}},
		{[]string{"a", "password"}, "hunter22", "[REDACTED]"},              // a default field, at depth
		{[]string{"user", "name"}, "Jane", "Jane"},                         // no field matches
		{[]string{"user", "name"}, "jane@example.com", "[REDACTED:email]"}, // rules still apply
		{nil, map[string]any{"user": map[string]any{"ssn": "1"}}, map[string]any{"user": map[string]any{"ssn": "[REDACTED]"}}},
	}
	for _, tt := range tests {
		if got := r.ValueAt(tt.path, tt.in); !cmp.Equal(got, tt.want) {
			t.Errorf("ValueAt(%q, %v) = %v, want %v", tt.path, tt.in, got, tt.want)
		}
	}
	path := []string{"User", "SSN"}
	r.ValueAt(path, "x")
	if path[0] != "User" || path[1] != "SSN" {
		t.Errorf("path modified: %q", path)
	}
}

func TestNoDefaults(t *testing.T) {
	r := redact.MustNew(redact.Config{NoDefaults: true})
	if got := r.String("jane@example.com Bearer abcdefghijkl"); got != "jane@example.com Bearer abcdefghijkl" {
		t.Errorf("NoDefaults redacted: %q", got)
	}
	var nilR *redact.Redactor
	if nilR.String("a@b.co") != "a@b.co" || nilR.Value("a@b.co") != "a@b.co" {
		t.Error("nil redactor changed its input")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  redact.Config
		want string
	}{
		{redact.Config{Patterns: []string{"("}}, `redact: patterns[0] "("`},
		{redact.Config{Patterns: []string{"x*"}}, "matches the empty string"},
		{redact.Config{Fields: []string{"a..b"}}, `redact: fields[0] "a..b": segment 2`},
		{redact.Config{Fields: []string{"a.**.b"}}, `segment 2`},
		{redact.Config{Fields: []string{"**"}}, `segment 1`},
	} {
		if _, err := redact.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
}

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)

// isAddress is the email rule's test of a match: a file name (icon@2x.png) is no address.
var isAddress = func() func(string) bool {
	for _, r := range redact.Builtin() {
		if r.Name == "email" {
			return r.Valid
		}
	}
	panic("no email rule")
}()

var builtin = redact.Builtin()

// patternsAlone is what String must return: every built-in pattern applied in turn to the whole
// text, with no shortcut.
func patternsAlone(s string) string {
	for _, rule := range builtin {
		repl := rule.Replacement
		if repl == "" {
			repl = "[REDACTED:" + rule.Name + "]"
		}
		s = rule.Pattern.ReplaceAllStringFunc(s, func(m string) string {
			if rule.Valid != nil && !rule.Valid(m) {
				return m
			}
			// The match alone, as the pattern saw it in s: each built-in one matches
			// itself whole, its submatches included.
			return rule.Pattern.ReplaceAllString(m, repl)
		})
	}
	return s
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"a@b.co", "Bearer abcdefghij", "password: hunter22", "sk-" + strings.Repeat("x", 20), "plain text"} {
		f.Add(s)
	}
	r := redact.MustNew(redact.Config{})
	reference := patternsAlone
	f.Add("xoxb-1234567890")
	f.Add("sk-proj-AbC_dEf-GhIjKlMnOpQrStUvWxYz0123456789")
	f.Add("sk-ant-api03-AbCdEf_GhIj-KlMnOpQrStUvWx-yz0123456789-AA")
	f.Add("token=abcd")
	f.Add("BeArEr 12345678")
	f.Add("AIza" + strings.Repeat("z", 35))
	f.Add("Authorization: Basic dXNlcjpwYXNz")
	f.Add("postgres://app:hunter2@db:5432/x")
	f.Add("Cookie: sid=abc; theme=dark")
	f.Add("GET /cb?access_token=abc&page=2")
	f.Add("icon@2x.png a@2x.png@example.com")
	f.Add(`Authorization: Digest username="Mufasa", realm="a b"` + "\r\nHost: x")
	f.Add(`{"Authorization": "Token abc=", "x": "y"}`)
	f.Add("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----")
	f.Add("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOY\n-----END PGP PRIVATE KEY BLOCK-----")
	f.Add("pwd={a;pwd={b;pwd={c")
	f.Add("Server=db;Pwd={p;w};PGPASSWORD=x")
	f.Add("https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx")
	f.Add("discord.com/api/v10/webhooks/1234/abcdefghijklmnopqrstuvwxyz")
	f.Add("api.telegram.org/file/bot123:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/x")
	f.Add("\"to\u212Aen\": \"x\", to\u212Aen=abcd1234") // K, the Kelvin sign, is k to (?i)
	f.Fuzz(func(t *testing.T, s string) {
		out := r.String(s)
		if want := reference(s); out != want {
			t.Fatalf("String(%q) = %q, the patterns alone give %q", s, out, want)
		}
		for _, m := range emailRE.FindAllString(out, -1) {
			if isAddress(m) {
				t.Fatalf("String(%q) = %q still holds an address, %q", s, out, m)
			}
		}
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", s, out, again)
		}
	})
}

// A quoted secret is redacted whole, up to its closing quote: a pass phrase with spaces in a
// JSON document or a Python dict's repr leaks none of its words.
func TestQuotedSecretRedactedWhole(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	tests := []struct{ in, want string }{
		{`{"password": "correct horse battery staple"}`, `{"password": "[REDACTED:secret]"}`},
		{`{'password': 'hunter two', 'user': 'bob'}`, `{'password': '[REDACTED:secret]', 'user': 'bob'}`},
		{`PASSWORD = "a b,c;d"`, `PASSWORD = "[REDACTED:secret]"`},
		{`{"token":"x"}`, `{"token":"[REDACTED:secret]"}`},
		{`{"token": "a \"quoted\" word"}`, `{"token": "[REDACTED:secret]"}`},
		{`{"token": ""}`, `{"token": ""}`}, // nothing to hide
	}
	for _, tt := range tests {
		got := r.String(tt.in)
		if got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := r.String(got); again != got {
			t.Errorf("not idempotent: %q → %q → %q", tt.in, got, again)
		}
	}
}

// A secret's name often carries a prefix: DB_PASSWORD, client_secret, aws_secret_access_key.
// The key=value rule redacts those as it does the bare names, and leaves names that merely
// contain one alone.
func TestPrefixedSecretNames(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	tests := []struct{ in, want string }{
		{"DB_PASSWORD=hunter22", "DB_PASSWORD=[REDACTED:secret]"},
		{"client_secret=abcdefgh", "client_secret=[REDACTED:secret]"},
		{"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key=[REDACTED:secret]"},
		{"GITHUB-TOKEN: abcd1234", "GITHUB-TOKEN: [REDACTED:secret]"},
		{"secret_key=abcdefgh", "secret_key=[REDACTED:secret]"},
		{"max_tokens=4096 token_count=1234 passwordless=true", "max_tokens=4096 token_count=1234 passwordless=true"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A document redacts the same whether it is text or decoded: a member whose name the
// key=value rule treats as a secret's is redacted in a decoded value too.
func TestValueRedactsWhatItsTextWould(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	const doc = `{"token": "abcdef123456", "DB_PASSWORD": "hunter22", "x-api-key": "k1234567", "secret_key": "s3cr3t!!", "tokens": 12}`
	var in map[string]any
	if err := json.Unmarshal([]byte(doc), &in); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(r.Value(in))
	for _, leak := range []string{"abcdef123456", "hunter22", "k1234567", "s3cr3t!!"} {
		if strings.Contains(r.String(doc), leak) {
			t.Fatalf("the text itself leaks %q: %s", leak, r.String(doc))
		}
		if strings.Contains(string(out), leak) {
			t.Errorf("Value leaks %q, which String redacts from the same document: %s", leak, out)
		}
	}
	if !strings.Contains(string(out), `"tokens":12`) {
		t.Errorf("Value redacted a member that is no secret: %s", out)
	}
}

// Go code builds JSON-shaped values from typed lists and maps, not only from what
// encoding/json decodes; what they hold is redacted as the same value decoded from JSON.
func TestValueTypedContainers(t *testing.T) {
	type email string
	r := redact.MustNew(redact.Config{Fields: []string{"**.ssn"}})
	in := map[string]any{
		"rows":    []map[string]any{{"email": "jane@example.com", "ssn": "123-45-6789"}},
		"header":  map[string][]string{"Authorization": {"Bearer abcdefghijkl"}},
		"nested":  [][]string{{"bob@example.org"}},
		"named":   email("amy@example.net"),
		"scores":  []float64{0.5, 1},
		"by_mail": map[string]float64{"joe@example.com": 1},
	}
	out, err := json.Marshal(r.Value(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"jane@", "123-45-6789", "abcdefghijkl", "bob@", "amy@", "joe@"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("Value leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(string(out), `"scores":[0.5,1]`) {
		t.Errorf("numbers changed: %s", out)
	}
}

// Credentials that are not key=value: a Basic Authorization value, the userinfo of a URL, a
// cookie. Each is redacted by its shape, and ordinary text that shares a word with it stays.
func TestCredentialsByShape(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	tests := []struct{ name, in, want string }{
		{"basic header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED:basic]"}, // user:pass
		{"basic in any case", "authorization: BASIC YWxhZGRpbjpvcGVuIHNlc2FtZQ==", "authorization: [REDACTED:basic]"},
		{"basic with padding", "Basic dXNlcjpwdw== next", "[REDACTED:basic] next"}, // user:pw
		{"basic with an empty password", "Basic Zm9vOg==", "[REDACTED:basic]"},     // foo:
		{"basic as a member", `{"Proxy-Authorization": "Basic dXNlcjpwYXNz"}`, `{"Proxy-Authorization": "[REDACTED:basic]"}`},
		{"basic in a sentence", "basic authentication is not enough", "basic authentication is not enough"},
		{"basic before a word that is base64", "a Basic LinkedIn profile, the basic idea", "a Basic LinkedIn profile, the basic idea"},
		{"basic base64 without a colon", "Basic dGVzdGluZzEy", "Basic dGVzdGluZzEy"}, // testing12: no user:password
		{"basic and a number", "Basic 20240101, basic 1234567890123456", "Basic 20240101, basic 1234567890123456"},
		{"url password", "postgres://app:hunter2@localhost:5432/db", "postgres://[REDACTED:userinfo]@localhost:5432/db"},
		{"url token as user", "git clone https://TOKEN123:x-oauth-basic@github.com/o/r.git", "git clone https://[REDACTED:userinfo]@github.com/o/r.git"},
		{"url password only", "redis://:s3cret@cache:6379/0", "redis://[REDACTED:userinfo]@cache:6379/0"},
		{"url password with an unescaped @", "https://u:p@ss@host.example/x", "https://[REDACTED:userinfo]@host.example/x"},
		{"url in JSON", `{"url":"https://bob:pw%21@example.com/a"}`, `{"url":"https://[REDACTED:userinfo]@example.com/a"}`},
		{"url without credentials", "https://example.com:8443/p/@me?q=a@b#f", "https://example.com:8443/p/@me?q=a@b#f"},
		{"url with a user only", "ssh://git@localhost/repo", "ssh://git@localhost/repo"},
		{"url then an address", "see http://host:8080 or user@example.com", "see http://host:8080 or [REDACTED:email]"},
		{"url then an address in JSON", `["http://host:1","b@example.io"]`, `["http://host:1","[REDACTED:email]"]`},
		{"cookie header", "Cookie: sid=abc123; theme=dark\nHost: x", "Cookie: [REDACTED:cookie]\nHost: x"},
		{"set-cookie header", "set-cookie: session=eyJhYmMi; Path=/; HttpOnly", "set-cookie: [REDACTED:cookie]; HttpOnly"},
		{"cookie quoted value", `Cookie: sid="abc123"; x=1`, "Cookie: [REDACTED:cookie]"},
		{"cookie as a member", `{"Cookie": "sid=abc123", "n": 1}`, `{"Cookie": "[REDACTED:cookie]", "n": 1}`},
		{"cookie JSON-escaped quotes", `{"h":"Cookie: sid=\"abc123\""}`, `{"h":"Cookie: [REDACTED:cookie]"}`},
		{"cookie in a sentence", "I ate a cookie: it was good, cookie_policy=strict", "I ate a cookie: it was good, cookie_policy=strict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := r.String(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
		})
	}
}

// Cookie and Set-Cookie members are redacted whole, as Authorization is: in a decoded document
// and in the http.Header a program logs.
func TestValueCookies(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	in := map[string]any{
		"cookie":  "sid=abc123",
		"headers": http.Header{"Set-Cookie": {"session=xyz789; Path=/"}, "Accept": {"text/plain"}},
	}
	want := map[string]any{
		"cookie":  "[REDACTED]",
		"headers": map[string]any{"Set-Cookie": "[REDACTED]", "Accept": []any{"text/plain"}},
	}
	if diff := cmp.Diff(want, r.Value(in)); diff != "" {
		t.Errorf("Value (-want +got):\n%s", diff)
	}
}

// A value Go code built can hold itself (JSON cannot): a cycle is cut where it closes, so a
// container that reaches itself more than once costs no more than one that reaches itself once,
// and what the cycle holds is still redacted.
func TestValueCycles(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	m := map[string]any{"email": "jane@example.com"}
	m["a"], m["b"], m["c"] = m, m, []any{m, m}
	s := []any{"bob@example.org", nil, nil}
	s[1], s[2] = s, s
	type node map[string]node
	n := node{}
	n["x"], n["y"] = n, n
	done := make(chan any)
	go func() { done <- []any{r.Value(m), r.Value(s), r.Value(n)} }()
	select {
	case got := <-done:
		out := got.([]any)
		if mm := out[0].(map[string]any); mm["email"] != "[REDACTED:email]" || mm["a"] != "[REDACTED]" {
			t.Errorf("Value(cyclic map) = %v", mm)
		}
		if ss := out[1].([]any); ss[0] != "[REDACTED:email]" || ss[1] != "[REDACTED]" {
			t.Errorf("Value(cyclic slice) = %v", ss)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Value of a cyclic value did not return")
	}
	// A value shared without a cycle is no cycle: each place it appears is redacted in full.
	shared := map[string]any{"email": "amy@example.net"}
	got := r.Value(map[string]any{"a": shared, "b": []any{shared}})
	want := map[string]any{"a": map[string]any{"email": "[REDACTED:email]"}, "b": []any{map[string]any{"email": "[REDACTED:email]"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shared value (-want +got):\n%s", diff)
	}
}

// JavaScript's and Java's JSON names its secrets in camelCase — accessToken, clientSecret,
// secretAccessKey — as often as Python's in snake_case: both spellings are redacted, in text
// and in a decoded document, and camelCase names that only contain a secret's word stay.
func TestCamelCaseSecretNames(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	const doc = `{"accessToken": "ya29.a0AfH6", "refreshToken": "1//0gLx", "idToken": "abcd1234", "clientSecret": "GOCSPX-1", ` +
		`"dbPassword": "hunter22", "secretAccessKey": "wJalrXUt", "sessionToken": "FwoGZXIv", "xApiKey": "k1234567", ` +
		`"maxTokens": 4096, "inputTokenCount": 12, "passwordless": true, "tokenizer": "cl100k", "publicKey": "ssh-ed25519"}`
	var in map[string]any
	if err := json.Unmarshal([]byte(doc), &in); err != nil {
		t.Fatal(err)
	}
	text := r.String(doc)
	out, _ := json.Marshal(r.Value(in))
	for _, leak := range []string{"ya29.a0AfH6", "1//0gLx", "abcd1234", "GOCSPX-1", "hunter22", "wJalrXUt", "FwoGZXIv", "k1234567"} {
		if strings.Contains(text, leak) {
			t.Errorf("String leaks %q: %s", leak, text)
		}
		if strings.Contains(string(out), leak) {
			t.Errorf("Value leaks %q: %s", leak, out)
		}
	}
	for _, keep := range []string{`"maxTokens":4096`, `"inputTokenCount":12`, `"passwordless":true`, `"tokenizer":"cl100k"`, `"publicKey":"ssh-ed25519"`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("Value redacted what is no secret, %s: %s", keep, out)
		}
		if k := strings.ReplaceAll(keep, ":", ": "); !strings.Contains(text, k) {
			t.Errorf("String redacted what is no secret, %s: %s", k, text)
		}
	}
	if got := r.String("clientSecret=abcdef12 accessToken: xyz12345"); got != "clientSecret=[REDACTED:secret] accessToken: [REDACTED:secret]" {
		t.Errorf("String(camelCase key=value) = %q", got)
	}
}

// stringCase is one String test: what goes in, what comes out.
type stringCase struct{ name, in, want string }

func runStringCases(t *testing.T, tests []stringCase) {
	t.Helper()
	r := redact.MustNew(redact.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := r.String(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
		})
	}
}

// A secret in a URL query or a form body is its parameter's value alone: the parameters after
// it stay, however short the secret.
func TestQuerySecretKeepsOtherParameters(t *testing.T) {
	runStringCases(t, []stringCase{
		{"short value", "GET /cb?access_token=abc&page=2", "GET /cb?access_token=[REDACTED:secret]&page=2"},
		{"long value", "https://api.example.com/v1?api_key=abcdef123456&page=2&sort=asc",
			"https://api.example.com/v1?api_key=[REDACTED:secret]&page=2&sort=asc"},
		{"middle parameter and a fragment", "/x?page=1&client_secret=s3cr3t&state=xyz#top",
			"/x?page=1&client_secret=[REDACTED:secret]&state=xyz#top"},
		{"form body", "grant_type=client_credentials&client_secret=abcd1234&scope=read",
			"grant_type=client_credentials&client_secret=[REDACTED:secret]&scope=read"},
		{"JSON from Go escapes &", `{"url":"https://x.io/?token=abc\u0026page=2"}`, `{"url":"https://x.io/?token=[REDACTED:secret]\u0026page=2"}`},
		{"in quotes", `curl "https://x.io/?password=pw&user=bob"`, `curl "https://x.io/?password=[REDACTED:secret]&user=bob"`},
		{"no secret", "/search?q=token&page=2&max_tokens=10", "/search?q=token&page=2&max_tokens=10"},
	})
}

// A file name with a pixel density or a file type after an @ is no email address.
func TestFileNamesAreNoAddresses(t *testing.T) {
	runStringCases(t, []stringCase{
		{"retina png", "icon@2x.png", "icon@2x.png"},
		{"webp", "<img src=logo@3x.webp>", "<img src=logo@3x.webp>"},
		{"fractional density", "sprite@1.5x.png and bg@2X.jpg", "sprite@1.5x.png and bg@2X.jpg"},
		{"file type as TLD", "assets/avatar@dark.svg", "assets/avatar@dark.svg"},
		{"an address still", "mail ops@example.io, not icon@2x.png", "mail [REDACTED:email], not icon@2x.png"},
		{"an address in a country domain", "jane@example.co.uk", "[REDACTED:email]"},
	})
}

// An Authorization or Proxy-Authorization header's credential is redacted whatever its
// scheme, not only Bearer and Basic.
func TestAuthorizationSchemes(t *testing.T) {
	runStringCases(t, []stringCase{
		{"token", "Authorization: Token abc123", "Authorization: [REDACTED:authorization]"},
		{"basic that is no user:password", "Authorization: Basic dGVzdGluZzEy", "Authorization: [REDACTED:authorization]"},
		{"basic credential", "Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED:basic]"},
		{"bearer", "authorization: Bearer abcdefghijkl", "authorization: [REDACTED:bearer]"},
		{"short bearer", "Authorization: Bearer abc", "Authorization: [REDACTED:authorization]"},
		{"digest header line", `Authorization: Digest username="Mufasa", realm="a b", nonce="dcd98b", response="6629fae4"` + "\r\nHost: x",
			"Authorization: [REDACTED:authorization]\r\nHost: x"},
		{"digest JSON-escaped", `{"h":"Authorization: Digest username=\"Mufasa\", response=\"6629fae4\"","n":1}`,
			`{"h":"Authorization: [REDACTED:authorization]","n":1}`},
		{"proxy negotiate", "Proxy-Authorization: Negotiate YIIGhgYGKwYBBQUCoIIGejCC", "Proxy-Authorization: [REDACTED:authorization]"},
		{"proxy basic member", `{"Proxy-Authorization": "Basic dGVzdGluZzEy"}`, `{"Proxy-Authorization": "[REDACTED:authorization]"}`},
		{"aws sigv4", "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=fe5f80f7",
			"Authorization: [REDACTED:authorization]"},
		{"no scheme", "Authorization: lin_api_0123456789", "Authorization: [REDACTED:authorization]"},
		{"curl", "curl -H 'Authorization: Token abc123' https://x.io", "curl -H 'Authorization: [REDACTED:authorization]' https://x.io"},
		{"go header dump", "map[Accept:[*/*] Authorization:[Token abc123]]", "map[Accept:[*/*] Authorization:[[REDACTED:authorization]]]"},
		{"padding before a JSON quote", `{"Authorization": "Token abc=", "x": "y"}`, `{"Authorization": "[REDACTED:authorization]", "x": "y"}`},
		{"in a sentence", "this endpoint requires authorization from an admin", "this endpoint requires authorization from an admin"},
	})
}

// More secrets of the shapes a user expects caught, and ordinary text that looks a little like
// them left alone.
func TestMoreSecretShapes(t *testing.T) {
	const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq0Zl+Ab==\n-----END RSA PRIVATE KEY-----"
	runStringCases(t, []stringCase{
		{"pem private key", "key:\n" + pem + "\ndone", "key:\n[REDACTED:private_key]\ndone"},
		{"pem in JSON", `{"k":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n","n":1}`,
			`{"k":"[REDACTED:private_key]\n","n":1}`},
		{"pem cut short", `{"k":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg","n":1}`, `{"k":"[REDACTED:private_key]","n":1}`},
		{"pem legacy encrypted", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\nMIIEow==\n-----END RSA PRIVATE KEY-----",
			"[REDACTED:private_key]"},
		{"two pems", pem + "\n" + pem, "[REDACTED:private_key]\n[REDACTED:private_key]"},
		{"pem public key stays", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----"},
		{"env api key", "export FOO_API_KEY=abcd1234efgh", "export FOO_API_KEY=[REDACTED:secret]"},
		{"env run-together capitals", "PGPASSWORD=hunter22 psql -h db", "PGPASSWORD=[REDACTED:secret] psql -h db"},
		{"env prefixed pwd", "MYSQL_PWD=pw mysql", "MYSQL_PWD=[REDACTED:secret] mysql"},
		{"shell working directory", "PWD=/home/app OLDPWD=/tmp", "PWD=/home/app OLDPWD=/tmp"},
		{"odbc connection string", "Driver={ODBC};Server=db;Uid=sa;Pwd={p;w};Database=x", "Driver={ODBC};Server=db;Uid=sa;Pwd=[REDACTED:secret];Database=x"},
		{"ado connection string", "Server=db;User Id=sa;Password=Secret1;Database=x", "Server=db;User Id=sa;Password=[REDACTED:secret];Database=x"},
		{"libpq key=value", "host=db user=app password=s3cr3t dbname=x", "host=db user=app password=[REDACTED:secret] dbname=x"},
		{"connection url", "DATABASE_URL=postgres://app:hunter2@db:5432/x", "DATABASE_URL=postgres://[REDACTED:userinfo]@db:5432/x"},
		{"mongodb srv url", "mongodb+srv://admin:pw@cluster0.example.net/", "mongodb+srv://[REDACTED:userinfo]@cluster0.example.net/"},
		{"aws temporary key id", "ASIAY34FZKBOKMUTVV7A", "[REDACTED:api_key]"},
		{"stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:api_key]"},
		{"primary key name", "pk_users_email_unique_constraint", "pk_users_email_unique_constraint"},
		{"unsigned jwt", "t=eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0. ok", "t=[REDACTED:api_key] ok"},
		{"gitlab", "glpat-abcdefghij0123456789", "[REDACTED:api_key]"},
		// Decided: a word "token" in prose, an id or a hash is no secret.
		{"token in a sentence", "the token expired, so request a new token", "the token expired, so request a new token"},
		{"token count", "max_tokens=4096 MAXTOKENS=10 token_count=12", "max_tokens=4096 MAXTOKENS=10 token_count=12"},
		{"commit id", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"},
		{"uuid", "run 123e4567-e89b-12d3-a456-426614174000", "run 123e4567-e89b-12d3-a456-426614174000"},
		{"digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	})
}

// JSON held as bytes — a json.RawMessage, a []byte, a named byte slice — is redacted inside, as
// the document it holds, and stays valid JSON; bytes that hold no JSON are redacted as text.
func TestValueRawJSON(t *testing.T) {
	type blob []byte
	r := redact.MustNew(redact.Config{Fields: []string{"req.ssn"}})
	raw := json.RawMessage(`{"token": "abc12345", "user": {"email": "jane@example.com"}, "n": 1.50, "html": "<b>&</b>", "ssn": "1"}`)
	in := map[string]any{
		"raw":  raw,
		"req":  json.RawMessage(`{"ssn": "123-45-6789", "ok": true}`),
		"b":    []byte(`["Bearer abcdefghijkl", 7]`),
		"text": []byte("call bob@example.org"),
		"bad":  json.RawMessage(`{"password": "hunter22"`), // cut short: no JSON
		"blob": blob(`{"api_key": "k1234567"}`),
		"list": []any{json.RawMessage(`"amy@example.net"`)},
	}
	before := string(raw)
	got := r.Value(in).(map[string]any)
	rm, ok := got["raw"].(json.RawMessage)
	if !ok || !json.Valid(rm) {
		t.Fatalf("raw = %#v, want a valid json.RawMessage", got["raw"])
	}
	if want := `{"html":"<b>&</b>","n":1.50,"ssn":"1","token":"[REDACTED]","user":{"email":"[REDACTED:email]"}}`; string(rm) != want {
		t.Errorf("raw = %s, want %s", rm, want)
	}
	if s := string(got["req"].(json.RawMessage)); s != `{"ok":true,"ssn":"[REDACTED]"}` {
		t.Errorf("req (field path through raw JSON) = %s", s)
	}
	if s := string(got["b"].([]byte)); s != `["[REDACTED:bearer]",7]` {
		t.Errorf("b = %s", s)
	}
	if s := string(got["text"].([]byte)); s != "call [REDACTED:email]" {
		t.Errorf("text = %s", s)
	}
	if s := string(got["bad"].(json.RawMessage)); s != `{"password": "[REDACTED:secret]"` {
		t.Errorf("bad = %s", s)
	}
	if s := string(got["blob"].(blob)); s != `{"api_key":"[REDACTED]"}` {
		t.Errorf("blob = %s", s)
	}
	if s := string(got["list"].([]any)[0].(json.RawMessage)); s != `"[REDACTED:email]"` {
		t.Errorf("list = %s", s)
	}
	if string(raw) != before {
		t.Errorf("input modified: %s", raw)
	}
	if _, err := json.Marshal(got); err == nil {
		t.Error("Marshal of the redacted value succeeded with an invalid RawMessage in it")
	}
	delete(got, "bad")
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"abc12345", "jane@", "123-45-6789", "k1234567", "amy@"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("leaks %q: %s", leak, out)
		}
	}
}

// BenchmarkManyPEMBegins: text of many BEGIN lines and no END (100 KB). Each BEGIN once looked
// for its END up to the end of the text, which took seconds here; it stops at the next marker.
func BenchmarkManyPEMBegins(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := strings.Repeat("-----BEGIN PRIVATE KEY-----", 100000/27)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

// An error message names a secret without holding one: the word after "token:" or "password:"
// stays when it is a placeholder (expired, missing, required, …) or a lone word in prose after
// "invalid", "missing", "expired" and the like. A value with a digit or a symbol, a quoted one,
// one after "=", and a YAML or env value with nothing in front are still secrets.
func TestProseAfterSecretNameStays(t *testing.T) {
	runStringCases(t, []stringCase{
		{"invalid token: expired", "error: invalid token: expired", "error: invalid token: expired"},
		{"password: required", "password: required", "password: required"},
		{"token: missing", "token: missing", "token: missing"},
		{"placeholder any case", "API_KEY: Missing, SECRET: none, password: <redacted>", "API_KEY: Missing, SECRET: none, password: <redacted>"},
		{"placeholder then a period", "401: token: expired.", "401: token: expired."},
		{"placeholder with =", "PASSWORD=unset TOKEN=null", "PASSWORD=unset TOKEN=null"},
		{"word after a qualifier", "invalid token: malformed", "invalid token: malformed"},
		{"word after a qualifier and words", "Missing access token: please log in", "Missing access token: please log in"},
		{"in a JSON error", `{"error":"expired refresh_token: revoked"}`, `{"error":"expired refresh_token: revoked"}`},
		// Still secrets.
		{"password with digits", "password: hunter22", "password: [REDACTED:secret]"},
		{"github token", "token: ghp_" + strings.Repeat("a", 36), "token: [REDACTED:api_key]"},
		{"JSON member", `{"password": "x"}`, `{"password": "[REDACTED:secret]"}`},
		{"JSON placeholder word is data", `{"password": "required"}`, `{"password": "[REDACTED:secret]"}`},
		{"env", "PASSWORD=hunter2", "PASSWORD=[REDACTED:secret]"},
		{"yaml", "db:\n  password: s3cr3t!\n", "db:\n  password: [REDACTED:secret]\n"},
		{"yaml word", "password: hunter", "password: [REDACTED:secret]"},
		{"word after = and a qualifier", "invalid token=abcdefgh", "invalid token=[REDACTED:secret]"},
		{"mixed case word after a qualifier", "invalid token: aBcDeFgH", "invalid token: [REDACTED:secret]"},
		{"digits after a qualifier", "invalid token: abc12345", "invalid token: [REDACTED:secret]"},
		{"qualifier too far", "invalid request from the client with token: hunter", "invalid request from the client with token: [REDACTED:secret]"},
	})
}

// A key=value secret first in a form body or query string with no "?" before it is its value
// alone, as it is after a "?" or "&": the parameters after it stay.
func TestFormSecretFirstKeepsOtherParameters(t *testing.T) {
	runStringCases(t, []stringCase{
		{"at the start", "token=abc&page=2", "token=[REDACTED:secret]&page=2"},
		{"after a space", "POST body: password=hunter22&user=bob&x=1", "POST body: password=[REDACTED:secret]&user=bob&x=1"},
		{"two secrets", "token=abc&client_secret=def&page=2", "token=[REDACTED:secret]&client_secret=[REDACTED:secret]&page=2"},
		{"in quotes", `data='api_key=k1&q=go'`, `data='api_key=[REDACTED:secret]&q=go'`},
		{"no parameter after the &", "password=ab&cd!", "password=[REDACTED:secret]"},
		{"repeated", strings.Repeat("token=a&", 3), "token=[REDACTED:secret]&token=[REDACTED:secret]&token=[REDACTED:secret]&"},
	})
}

// BenchmarkManyRedactedKeys: the text BenchmarkManyPEMBegins leaves once the private key rule
// has replaced it, "[REDACTED:private_key]" many times over. Its colons and "key" once made
// every key=value rule scan it (tens of milliseconds); no secret's name comes before a colon.
func BenchmarkManyRedactedKeys(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := strings.Repeat("[REDACTED:private_key]", 100000/22)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

// BenchmarkManyPwd: "Pwd=" many times (100 KB); the shell's PWD, no connection string's: the
// key=value rules' scans are skipped.
func BenchmarkManyPwd(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := strings.Repeat("Pwd=", 100000/4)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

// BenchmarkManyFormSecrets: "token=a&" many times (100 KB), each value a secret to replace.
func BenchmarkManyFormSecrets(b *testing.B) {
	r := redact.MustNew(redact.Config{})
	s := strings.Repeat("token=a&", 100000/8)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

// A URL whose path carries its credential — a Slack or Discord webhook, a Telegram bot's API
// URL — loses the credential and keeps the rest: the host, the ids before it, the method and
// query after it. Decided: only these known shapes are; a long segment of another URL's path
// (a commit id, a UUID, a digest, an opaque id) is an id a reader needs, as in prose.
func TestURLPathSecrets(t *testing.T) {
	const (
		discordToken  = "Xo1_2-Ab3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4yZ5aB6cD7eF8gH9iJ0kL1mN2oP3q"
		telegramToken = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	)
	runStringCases(t, []stringCase{
		{"slack webhook", "posted to https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx, done",
			"posted to https://hooks.slack.com/services/T0123ABCD/B0456EFGH/[REDACTED:webhook], done"},
		{"slack webhook in JSON", `{"url":"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx","n":1}`,
			`{"url":"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/[REDACTED:webhook]","n":1}`},
		{"slack workflow webhook", "https://hooks.slack.com/workflows/T0123ABCD/A0456EFGH/456123789012345678/0123456789abcdef0123456789abcdef",
			"https://hooks.slack.com/workflows/T0123ABCD/A0456EFGH/456123789012345678/[REDACTED:webhook]"},
		{"slack trigger", "SLACK_URL=https://hooks.slack.com/triggers/T0123ABCD/4561237890123/0123456789abcdef0123456789abcdef",
			"SLACK_URL=https://hooks.slack.com/triggers/T0123ABCD/4561237890123/[REDACTED:webhook]"},
		{"slack without a scheme", "hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx",
			"hooks.slack.com/services/T0123ABCD/B0456EFGH/[REDACTED:webhook]"},
		{"discord webhook", "curl -X POST https://discord.com/api/webhooks/123456789012345678/" + discordToken + "?wait=true -d @msg.json",
			"curl -X POST https://discord.com/api/webhooks/123456789012345678/[REDACTED:webhook]?wait=true -d @msg.json"},
		{"discord versioned, old host", "https://discordapp.com/api/v10/webhooks/123456789012345678/" + discordToken + "/messages/42",
			"https://discordapp.com/api/v10/webhooks/123456789012345678/[REDACTED:webhook]/messages/42"},
		{"discord ptb", "<https://ptb.discord.com/api/webhooks/123456789012345678/" + discordToken + ">",
			"<https://ptb.discord.com/api/webhooks/123456789012345678/[REDACTED:webhook]>"},
		{"telegram bot", "GET https://api.telegram.org/bot123456789:" + telegramToken + "/sendMessage?chat_id=42 200",
			"GET https://api.telegram.org/bot123456789:[REDACTED:bot_token]/sendMessage?chat_id=42 200"},
		{"telegram file", "https://api.telegram.org/file/bot123456789:" + telegramToken + "/photos/file_1.jpg",
			"https://api.telegram.org/file/bot123456789:[REDACTED:bot_token]/photos/file_1.jpg"},
		{"shortest slack", "hooks.slack.com/triggers/T0/1/0123456789abcdef", "hooks.slack.com/triggers/T0/1/[REDACTED:webhook]"},
		{"shortest discord", "discord.com/api/webhooks/1/01234567890123456789", "discord.com/api/webhooks/1/[REDACTED:webhook]"},
		{"shortest telegram", "api.telegram.org/bot1:01234567890123456789", "api.telegram.org/bot1:[REDACTED:bot_token]"},
		{"userinfo password", "fetching https://alice:s3cr3t@example.com/path/to?x=1 now", "fetching https://[REDACTED:userinfo]@example.com/path/to?x=1 now"},
		// Ordinary URLs stay, long path segments included.
		{"commit", "https://github.com/troupehq/troupe/commit/3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
			"https://github.com/troupehq/troupe/commit/3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"},
		{"uuid", "https://example.com/runs/123e4567-e89b-12d3-a456-426614174000/events",
			"https://example.com/runs/123e4567-e89b-12d3-a456-426614174000/events"},
		{"digest", "https://registry.example.com/v2/app/blobs/sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"https://registry.example.com/v2/app/blobs/sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"opaque id", "https://storage.example.com/b/Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA/o/report.pdf",
			"https://storage.example.com/b/Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA/o/report.pdf"},
		{"slack docs", "see https://api.slack.com/messaging/webhooks and https://hooks.slack.com/services/",
			"see https://api.slack.com/messaging/webhooks and https://hooks.slack.com/services/"},
		{"discord without a token", "https://discord.com/api/webhooks/123456789012345678 and https://discord.com/channels/123456789012345678/987654321098765432",
			"https://discord.com/api/webhooks/123456789012345678 and https://discord.com/channels/123456789012345678/987654321098765432"},
		{"telegram docs", "https://core.telegram.org/bots/api#sendmessage", "https://core.telegram.org/bots/api#sendmessage"},
	})
}

// encoding/json folds the Kelvin sign to k and the long s to s when it matches a member to a
// field's tag, so a Go server reads "x_api_\u212Aey" as x_api_key: Value redacts it as it
// would x_api_key.
func TestSecretMemberNamesWithUnicodeFolds(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	in := map[string]any{"x_api_\u212Aey": "k1234567", "oauth_client_\u017Fecret": "GOCSPX-1", "db_pa\u017F\u017Fword": "hunter22",
		"\u212Aelvin_scale": "kept-value"}
	out, _ := json.Marshal(r.Value(in))
	for _, leak := range []string{"k1234567", "GOCSPX-1", "hunter22"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("Value leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(string(out), "kept-value") {
		t.Errorf("Value redacted a member that names no secret: %s", out)
	}
	var again struct {
		Key string `json:"x_api_key"`
	}
	if err := json.Unmarshal([]byte(`{"x_api_\u212Aey": "k1234567"}`), &again); err != nil || again.Key != "k1234567" {
		t.Fatalf("encoding/json no longer folds the Kelvin sign (%v, %+v): this test's premise is gone", err, again)
	}
}
