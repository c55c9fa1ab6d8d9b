package redact_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/troupehq/troupe/redact"
)

// An http.Header encoded as JSON (json.Marshal(req.Header), how headers are commonly logged)
// holds each value in a list. Its Authorization value must be redacted whatever its scheme,
// and the redaction must leave the JSON valid.
func TestAuthorizationInJSONEncodedHeader(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	for _, tc := range []struct{ scheme, cred string }{
		{"Token", "abc123def456"},
		{"Bearer", "abcdefghijklmnop"},
		{"Negotiate", "YIIGhgYGKwYBBQUCoIIGejCC"},
	} {
		h := http.Header{"Authorization": {tc.scheme + " " + tc.cred}}
		b, _ := json.Marshal(h)
		got := r.String(string(b))
		if strings.Contains(got, tc.cred) || !json.Valid([]byte(got)) {
			t.Errorf("String(%s) = %s: want the credential gone and the JSON still valid", b, got)
		}
	}
}

// The same for Cookie and Set-Cookie: their name=value pairs are redacted "as a header line or
// a member of a JSON document", and http.Header's JSON is such a document.
func TestCookieInJSONEncodedHeader(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	for _, h := range []http.Header{
		{"Cookie": {"session=abc123xyz"}},
		{"Set-Cookie": {"session=abc123xyz; Path=/; HttpOnly"}},
	} {
		b, _ := json.Marshal(h)
		got := r.String(string(b))
		if strings.Contains(got, "abc123xyz") || !json.Valid([]byte(got)) {
			t.Errorf("String(%s) = %s: want the cookie value gone and the JSON still valid", b, got)
		}
	}
}

// ";Pwd=… in a connection string" is a secret; a connection string may quote the value (it
// must, when the password holds a ';'), as it may Password's, which is caught.
func TestQuotedPwdInConnectionString(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	for _, in := range []string{
		`Server=db;Uid=sa;Pwd="hunter22";Database=x`,
		`Server=db;Uid=sa;PWD='hunter22';Database=x`,
		`Server=db;Uid=sa;Pwd="p;w0rd!";Database=x`,
	} {
		got := r.String(in)
		if strings.Contains(got, "hunter22") || strings.Contains(got, "w0rd") || !strings.HasSuffix(got, ";Database=x") {
			t.Errorf("String(%q) = %q: want the password gone, the rest kept", in, got)
		}
	}
}

// "in a URL query the secret parameter's value alone, the others kept": a secret parameter
// with an empty value must not take the parameters after it.
func TestEmptySecretParameterKeepsTheOthers(t *testing.T) {
	r := redact.MustNew(redact.Config{})
	for _, tc := range []struct{ in, keep string }{
		{"https://x.io/cb?token=&page=2", "&page=2"},
		{"https://x.io/cb?access_token=&state=xyz&code=1", "&state=xyz&code=1"},
		{"password=&user=bob", "&user=bob"},
	} {
		if got := r.String(tc.in); !strings.HasSuffix(got, tc.keep) {
			t.Errorf("String(%q) = %q: want %q kept", tc.in, got, tc.keep)
		}
	}
}
