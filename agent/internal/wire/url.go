package wire

import (
	"net/url"
	"strings"
)

// ShownURL returns u as errors and details quote it: a password in it, and the values of query
// parameters that look like secrets — by their name (a key, token, signature, password) or by
// their shape (see keyLike) — masked as "xxxxx"; and those values, for the agent to scrub from
// whatever a service echoes back.
func ShownURL(u *url.URL) (string, []string) {
	var secrets []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		secrets = append(secrets, pw)
	}
	shown := *u
	if q := u.Query(); len(q) > 0 {
		masked := false
		for k, vs := range q {
			for i, v := range vs {
				if v != "" && (secretParam(k) || keyLike(v)) {
					secrets, vs[i], masked = append(secrets, v), "xxxxx", true
				}
			}
		}
		if masked {
			shown.RawQuery = q.Encode()
		}
	}
	return shown.Redacted(), secrets
}

// secretParam says whether a query parameter's name names a secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "pwd", "sig", "auth", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// keyLike says whether a value looks like a key whatever its parameter's name: 20 characters
// or more of letters, digits and -_.~+/= (base64's among them) with both letters and digits
// ("sk-proj-3Fh…"), not a date or a version ("2024-06-01").
func keyLike(v string) bool {
	if len(v) < 20 {
		return false
	}
	letter, digit := false, false
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letter = true
		case r >= '0' && r <= '9':
			digit = true
		case !strings.ContainsRune("-_.~+/=", r):
			return false
		}
	}
	return letter && digit
}
