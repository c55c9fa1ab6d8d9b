package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Replacement texts. A built-in rule writes "[REDACTED:<rule>]"; caller patterns and fields
// write Config.Replacement.
const DefaultReplacement = "[REDACTED]"

// Rule is a named pattern whose matches are replaced. It holds no state: it is safe for
// concurrent use.
type Rule struct {
	Name    string
	Pattern *regexp.Regexp
	// Replacement is what a match becomes, in the template syntax of regexp.Regexp.Expand:
	// "${1}[REDACTED:userinfo]@" keeps the scheme of a URL. "" is "[REDACTED:<Name>]".
	Replacement string
	// Valid, when set, confirms a match the pattern alone cannot tell from ordinary text; a match
	// it rejects is left as it is. Nil confirms every match.
	Valid func(match string) bool

	may   func(string) bool // a built-in rule's cheap test, with its name's in mayMatch
	spans spanFunc          // a built-in rule's spans; nil is the text between its barriers
}

// Builtin returns the built-in rules, in the order they apply: private key blocks, bearer
// tokens, Basic credentials, the rest of an Authorization header, credentials in URLs (a
// password in the userinfo, a webhook's or a bot's secret in the path), API keys of well-known
// shapes, cookies, key=value secrets, then email addresses.
func Builtin() []Rule {
	const secret = "${1}${2}[REDACTED:secret]" // the key stays, so a reader knows what was there
	return []Rule{
		// A PEM private key, from BEGIN to END whole; one cut short (no END) up to where its
		// base64 ends. In text or JSON-escaped ("\n"). Public keys and certificates stay. The
		// body is what a PEM body holds (base64, line breaks, a legacy key's "Proc-Type: 4,
		// ENCRYPTED" and "DEK-Info" headers), never a run of dashes: a BEGIN with no END then
		// stops looking at the next marker instead of at the end of the text, which made text
		// of many BEGIN lines take time quadratic in its length.
		{Name: "private_key", Pattern: regexp.MustCompile(pemBegin + `(?:[A-Za-z0-9+/=\r\n\t:,. ]|-[A-Za-z0-9]|\\[rnt])*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----` +
			`|` + pemBegin + `(?:[A-Za-z0-9+/=\r\n]|\\[rn])*`)},
		{Name: "bearer", Pattern: regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*`)},
		// "Basic" then base64: redacted only when it decodes to user:password, which "basic
		// authentication", "Basic LinkedIn" or "basic 20240101" do not.
		{Name: "basic", Pattern: regexp.MustCompile(`(?i)\bbasic\s+[A-Za-z0-9+/]{6,}={0,2}`), Valid: isBasicCredential},
		// What an Authorization or Proxy-Authorization header carries is a credential whatever
		// its scheme (Token, Digest, Negotiate, AWS4-HMAC-SHA256, none at all): its value is
		// redacted whole — up to the end of the line, a closing quote, or the ] of a Go
		// http.Header dump —, as a decoded document's authorization member is. A Digest's
		// quoted parameters (username="Mufasa", realm="a b") are part of it. A value the bearer
		// or basic rule already replaced stays as they left it.
		{Name: "authorization", Pattern: regexp.MustCompile(`(?i)\b((?:proxy-)?authorization["']?\s*[:=]\s*(?:\[\s*)?["']?)` + authValue),
			Replacement: "${1}[REDACTED:authorization]", Valid: notRedactedAuthorization, spans: authorizationSpans},
		// The userinfo of a URL that carries a password, whole: the user may be the token
		// (https://TOKEN:x-oauth-basic@github.com). Up to the last @ of the authority, as URL
		// parsers split it, so a password with an unescaped @ is not cut in two; not across
		// characters no URL holds (white space, quotes, <>). A user without a password
		// (ssh://git@host) is an account, not a credential, and stays.
		{Name: "userinfo", Pattern: regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@:"'<>\\^{|}\x60]*:[^\s/?#"'<>\\^{|}\x60]+@`),
			Replacement: "${1}[REDACTED:userinfo]@"},
		// A webhook URL's secret, which its path carries: Slack's (services, workflows,
		// triggers) last segment, Discord's token after the webhook's id. The host, the ids and
		// what follows the secret stay. Before the API keys, which could match a token's part.
		{Name: "webhook", Pattern: regexp.MustCompile(`\b((?i:hooks\.slack\.com)/(?:services/T[A-Z0-9]+/B[A-Z0-9]+|workflows/T[A-Z0-9]+/A[A-Z0-9]+/\d+|triggers/T[A-Z0-9]+/\d+)/)` +
			`[A-Za-z0-9]{16,}` +
			`|\b((?i:discord(?:app)?\.com)/api(?:/v\d+)?/webhooks/\d+/)[A-Za-z0-9_-]{20,}`),
			Replacement: "${1}${2}[REDACTED:webhook]"},
		// A Telegram bot's token in its API URL (…/bot<id>:<secret>/sendMessage): the secret.
		{Name: "bot_token", Pattern: regexp.MustCompile(`\b((?i:api\.telegram\.org)/(?:file/)?bot\d+:)[A-Za-z0-9_-]{20,}`),
			Replacement: "${1}[REDACTED:bot_token]"},
		// OpenAI's project, service-account and admin keys and Anthropic's keys, whose bodies
		// mix '_' and '-' anywhere, come first: the generic sk- shape after them could match
		// only a part of one and leave the rest.
		{Name: "api_key", Pattern: regexp.MustCompile(`\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}` + // OpenAI
			`|\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}` + // Anthropic (sk-ant-api03-…, sk-ant-admin01-…)
			`|\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}` + // other sk- keys
			`|\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}` + // Stripe (not pk_: a primary key's name)
			`|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` + // AWS access key id, long-lived and temporary
			`|\bgh[pousr]_[A-Za-z0-9]{36,}` + // GitHub tokens
			`|\bgithub_pat_[A-Za-z0-9_]{22,}` +
			`|\bglpat-[A-Za-z0-9_\-]{20,}` + // GitLab
			`|\bnpm_[A-Za-z0-9]{36,}` + // npm
			`|\bhf_[A-Za-z0-9]{34,}` + // Hugging Face
			`|\bxox[abposr]-[A-Za-z0-9-]{10,}` + // Slack
			`|\bAIza[0-9A-Za-z_\-]{35}` + // Google API key
			// JWT, JWS or JWE: a JSON header, a payload, then up to three more parts, an
			// unsigned token's empty signature included.
			`|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){1,3}`)},
		// A Cookie or Set-Cookie header's name=value pairs (a Set-Cookie's attributes with
		// them), as a header line or a member of a JSON document; the header name stays. A
		// value may be quoted, its quotes JSON-escaped. "cookie: oatmeal" has no pair: it stays.
		{Name: "cookie", Pattern: regexp.MustCompile(`(?i)\b((?:set-)?cookie["']?\s*:\s*(?:\[\s*)?["']?)` + cookiePair + `(?:;\s*` + cookiePair + `)*`),
			Replacement: "${1}[REDACTED:cookie]"},
		// key=value secrets: in a URL query or form body (?access_token=abc&page=2), the value
		// up to the next parameter, whatever its length; a quoted value up to its closing quote
		// (the quote stays); else a bare one up to white space or punctuation — one a query
		// rule already replaced stays, with the parameters after it. ODBC's and MySQL's PWD
		// counts when it is a connection string's (;PWD=) or prefixed (MYSQL_PWD): the shell's
		// PWD is a directory. The rules share their name.
		// The first parameter of a form body or a query string with no "?" before it
		// (token=abc&page=2): the value up to an & that a parameter's name= follows. Before the
		// rule below, which then has fewer values to replace and a shorter text to scan.
		{Name: "secret", Pattern: regexp.MustCompile(`(?i)\b(` + secretNames + `=)[^&#\s"'<>\\]+(&` + paramName + `=)`),
			Replacement: "${1}[REDACTED:secret]${2}", may: func(s string) bool { return strings.IndexByte(s, '&') >= 0 }},
		{Name: "secret", Pattern: regexp.MustCompile(`(?i)([?&]` + secretNames + `=)[^&#\s"'<>\\]+`), Replacement: "${1}[REDACTED:secret]"},
		{Name: "secret", Pattern: regexp.MustCompile(secretName + `(["']?\s*[:=]\s*")(?:[^"\\\n]|\\.)+`), Replacement: secret,
			may: func(s string) bool { return strings.IndexByte(s, '"') >= 0 }, spans: quotedSecretSpans('"')},
		{Name: "secret", Pattern: regexp.MustCompile(secretName + `(["']?\s*[:=]\s*')(?:[^'\\\n]|\\.)+`), Replacement: secret,
			may: func(s string) bool { return strings.IndexByte(s, '\'') >= 0 }, spans: quotedSecretSpans('\'')},
		// A bare value, the words of prose that may come before its name with it (group 1), so
		// that isBareSecret can tell "invalid token: malformed" from "token: malformed".
		{Name: "secret", Pattern: regexp.MustCompile(`(?i)((?:\b` + proseQualifiers + `[ \t]+(?:[a-z]+[ \t]+){0,2})?\b` + secretNames + `)` +
			`(["']?\s*[:=]\s*["']?)[^\s"',;]{4,}`), Replacement: secret, Valid: isBareSecret, spans: bareSecretSpans},
		{Name: "secret", Pattern: regexp.MustCompile(`(?i)((?:;\s*|\b(?:[a-z0-9]+[_-])+)pwd\s*=\s*)(?:\{[^}\n]*\}[^\s"';]*|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"';]+)`), Replacement: "${1}[REDACTED:secret]",
			spans: pwdSpans},
		// An address, but not a file name with a pixel density (icon@2x.png) or whose
		// "top-level domain" is a file type no registry delegates (logo@dark.svg).
		{Name: "email", Pattern: regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`), Valid: isEmailAddress},
	}
}

// pemBegin starts a PEM private key: PKCS#1 (RSA, EC, DSA), PKCS#8 (plain or ENCRYPTED),
// OpenSSH's, and PGP's "PRIVATE KEY BLOCK".
const pemBegin = `-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`

// authValue is an Authorization header's value: characters up to white space, a quote or ],
// with spaces and tabs between them; a JSON-escaped quote or backslash; a quoted parameter
// (realm="a b"). A quoted parameter's text does not start with what follows a JSON string's
// closing quote (a comma, a colon, a bracket, a space), so that base64 padding before it is no
// parameter: in {"Authorization": "Token abc=", "x": "y"} the value ends at abc=.
const authValue = `(?:` + authFirst + `)(?:[ \t]*(?:` + authUnit + `))*`

// authFirst is authValue's first unit: not a "[", which opens the list of values of an
// http.Header encoded as JSON or dumped by Go, never a credential.
const authFirst = `="(?:[^\s"\\,:}\]](?:[^"\\\r\n]|\\.)*)?"|\\["\\/]|[^\s"'\\\]\[]`

const authUnit = `="(?:[^\s"\\,:}\]](?:[^"\\\r\n]|\\.)*)?"|\\["\\/]|[^\s"'\\\]]`

// redactedAuthorization is an Authorization header the bearer or basic rule already redacted.
var redactedAuthorization = regexp.MustCompile(`(?i)^(?:proxy-)?authorization["']?\s*[:=]\s*(?:\[\s*)?["']?\[REDACTED`)

func notRedactedAuthorization(match string) bool { return !redactedAuthorization.MatchString(match) }

// paramName is the name of a form or query parameter.
const paramName = `[A-Za-z0-9_.~%\[\]\-]+`

// proseQualifiers are the words that, a word or two before a secret's name, make what follows
// "name:" an error message's prose ("invalid token: malformed"), not a value.
const proseQualifiers = `(?:invalid|missing|expired|revoked|malformed|bad|wrong|incorrect|unknown|empty|no)`

// placeholders are the values that say a secret is absent or hidden rather than hold one.
var placeholders = map[string]bool{
	"expired": true, "missing": true, "required": true, "invalid": true, "none": true, "null": true,
	"empty": true, "redacted": true, "unset": true, "not_set": true, "notset": true, "undefined": true,
	"blank": true, "hidden": true, "masked": true, "omitted": true, "revoked": true, "unknown": true,
	"provided": true, "present": true, "absent": true,
}

// isBareSecret reports whether a bare key=value match holds a secret: not one the query rule
// already replaced (access_token=[REDACTED:secret]&page=2 keeps its &page=2), not a
// placeholder ("password: required", "TOKEN=none"), and not a lone word of prose after a
// qualifier and a colon ("invalid token: malformed"; not "token: malformed", which is YAML).
func isBareSecret(match string) bool {
	sep := strings.IndexAny(match, ":=")
	v := strings.TrimLeft(match[sep+1:], " \t\r\n\f\"'")
	if strings.HasPrefix(v, "[REDACTED") {
		return false
	}
	if match[sep] == '=' && strings.HasPrefix(match[sep+1:], "&") {
		// An empty value in a query or form ("token=&page=2"): what follows is the next
		// parameter, not this one's value.
		return false
	}
	w := strings.TrimRight(v, ".!?:)>")
	w = strings.TrimLeft(w, "(<")
	if placeholders[strings.ToLower(w)] {
		return false
	}
	if match[sep] == ':' && strings.ContainsAny(match[:sep], " \t") && isProseWord(w) {
		// The name has words of prose before it: the match starts at a qualifier (the name
		// and its separator hold no blank before the colon but one the regexp allows, "token :").
		if q := match[:strings.IndexAny(match, " \t")]; proseQualifier.MatchString(q) {
			return false
		}
	}
	return true
}

var proseQualifier = regexp.MustCompile(`(?i)^` + proseQualifiers + `$`)

// isProseWord reports whether w is a word as prose writes it: lower-case ASCII letters, the
// first one perhaps a capital.
func isProseWord(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || i == 0 && 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// fileTypes are file name extensions that are no top-level domain: an "address" ending in one
// is a file name (sprite@2x.png, logo@dark.svg, report@v2.pdf).
var fileTypes = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "webp": true, "svg": true, "ico": true,
	"avif": true, "bmp": true, "tif": true, "tiff": true, "heic": true, "pdf": true, "json": true,
	"yaml": true, "yml": true, "js": true, "mjs": true, "ts": true, "tsx": true, "jsx": true,
	"css": true, "scss": true, "html": true, "htm": true, "txt": true, "csv": true, "xml": true,
	"woff": true, "ttf": true, "otf": true, "webm": true, "wav": true, "tgz": true, "gz": true,
}

// isEmailAddress reports whether an email-shaped match is an address rather than a file name:
// its domain is no pixel density (2x, 1.5x) and its last label no file type.
func isEmailAddress(match string) bool {
	domain := match[strings.LastIndexByte(match, '@')+1:]
	tld := strings.ToLower(domain[strings.LastIndexByte(domain, '.')+1:])
	return !fileTypes[tld] && !density.MatchString(domain)
}

var density = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?[xX]\.`)

// cookiePair is a cookie's name=value: a value of cookie octets (no white space, quote, comma,
// semicolon or backslash), or one in quotes, plain or JSON-escaped (\"abc\").
const cookiePair = `[^\s;,="'\\]+=(?:\\?"[^\s;,"\\]*\\?"|[^\s;,"'\\]*)`

// isBasicCredential reports whether a "Basic" match's base64 is what clients send (RFC 7617):
// padded, at least 8 characters, decoding to user:password in printable ASCII. A word that
// happens to be valid base64 seldom decodes to printable ASCII with a colon, and a number never
// does (digits decode to bytes over 0x7f). A credential in another charset is not recognized.
func isBasicCredential(match string) bool {
	f := strings.Fields(match)
	tok := f[len(f)-1]
	if len(tok) < 8 || len(tok)%4 != 0 {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil || bytes.IndexByte(b, ':') < 0 {
		return false
	}
	for _, c := range b {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// secretNames are the names of key=value secrets, with any prefix ending in '_' or '-':
// DB_PASSWORD, client_secret, aws_secret_access_key; or in camelCase or PascalCase, the name's
// words capitalized after the prefix's: accessToken, clientSecret, SecretAccessKey; or in
// capitals run together, as libpq's PGPASSWORD. Not max_tokens, maxTokens, MAXTOKENS,
// passwordless or publicKey.
const secretNames = `(?:[a-z0-9]+[_-])*(?:api[_-]?key|secret|password|passwd|token|access[_-]?key|(?:secret|private)[_-]?key` +
	`|(?-i:[A-Za-z][A-Za-z0-9]*(?:Token|Secret|Password|Passwd|(?:Api|API|Access|Secret|Private)Key))` +
	`|(?-i:[A-Z][A-Z0-9]*(?:TOKEN|SECRET|PASSWORD|PASSWD|(?:API|ACCESS|SECRET|PRIVATE)KEY)))`

// secretName starts a key=value rule: the name, as submatch 1.
const secretName = `(?i)\b(` + secretNames + `)`

// secretMember matches a JSON member name the key=value rule would take for a secret's, so
// that a decoded document is redacted as its text is.
var secretMember = regexp.MustCompile(`(?i)^` + secretNames + `$`)

func isSecretMember(k string) bool {
	return len(k) >= 5 && hasSecretWord(k) && secretMember.MatchString(k)
}

// hasSecretWord reports whether s holds what every secret name holds, in any case. A name with
// the long s (ſ) or the Kelvin sign (K), which (?i) and encoding/json fold to s and k, is left to
// the pattern: "api_\u212Aey" is api_key to a Go server that decodes it.
func hasSecretWord(s string) bool {
	if strings.Contains(s, "\u017F") || strings.Contains(s, "\u212A") {
		return true
	}
	return containsFoldASCII(s, "key") || containsFoldASCII(s, "secret") ||
		containsFoldASCII(s, "passw") || containsFoldASCII(s, "token")
}

// DefaultFields are field paths redacted whatever their value: members that by their name hold
// credentials, at any depth.
var defaultFields = []string{"**.password", "**.passwd", "**.api_key", "**.apikey", "**.authorization",
	"**.secret", "**.client_secret", "**.access_token", "**.refresh_token", "**.private_key",
	"**.cookie", "**.set-cookie"}

// DefaultFields returns the field paths redacted unless Config.NoDefaults is set.
func DefaultFields() []string { return slices.Clone(defaultFields) }

// Config says what to redact. The zero value redacts the built-in rules and default fields.
type Config struct {
	// Patterns are extra regular expressions (RE2 syntax); their matches are replaced.
	Patterns []string
	// Fields are JSON field paths whose values are replaced whole: member names separated by
	// ".", where "*" matches any one member and a leading "**." matches at any depth. Array
	// elements are transparent: "users.email" reaches the email of every element of users.
	// Names are matched case-insensitively.
	Fields []string
	// NoDefaults turns off the built-in rules and default fields.
	NoDefaults bool
	// Replacement replaces what caller patterns and fields match; "" is DefaultReplacement.
	Replacement string
}

// Redactor applies a Config. It is immutable and safe for concurrent use; the zero value
// redacts nothing (use New).
type Redactor struct {
	rules       []rule
	fields      [][]string
	secrets     bool // members named as key=value secrets are replaced whole (the defaults)
	replacement string
}

// rule is a Rule ready to apply: its replacement text, and a cheap test that rules out a
// string the pattern cannot match (most strings, which then cost no regexp scan).
type rule struct {
	re     *regexp.Regexp
	repl   string
	expand bool // repl refers to submatches
	may    func(string) bool
	valid  func(string) bool
	spans  spanFunc // nil: the pattern runs over the whole text
}

// mayMatch are the built-in rules' cheap tests: what any match of the pattern must contain,
// and the fewest bytes it spans.
var mayMatch = map[string]func(string) bool{
	// Not "PRIVATE KEY-----": a PGP block's markers end "PRIVATE KEY BLOCK-----".
	"private_key": func(s string) bool {
		return len(s) >= 27 && strings.Contains(s, "-----BEGIN ") && strings.Contains(s, "PRIVATE KEY")
	},
	"authorization": func(s string) bool {
		return len(s) >= 15 && strings.ContainsAny(s, ":=") && containsFoldASCII(s, "authorization")
	},
	"bearer": func(s string) bool { return len(s) >= 15 && containsFoldASCII(s, "bearer") },
	"basic":  func(s string) bool { return len(s) >= 14 && containsFoldASCII(s, "basic") },
	"userinfo": func(s string) bool {
		return len(s) >= 7 && strings.Contains(s, "://") && strings.IndexByte(s, '@') >= 0
	},
	"webhook": func(s string) bool {
		return len(s) >= 46 && (strings.Contains(s, "/webhooks/") || strings.Contains(s, "/services/T") ||
			strings.Contains(s, "/workflows/T") || strings.Contains(s, "/triggers/T"))
	},
	"bot_token": func(s string) bool {
		return len(s) >= 42 && strings.Contains(s, "/bot") && containsFoldASCII(s, "api.telegram.org/")
	},
	"api_key": func(s string) bool {
		return len(s) >= 15 && slices.ContainsFunc(apiKeyPrefixes, func(p string) bool { return strings.Contains(s, p) })
	},
	"cookie": func(s string) bool {
		return len(s) >= 9 && strings.IndexByte(s, '=') >= 0 && containsFoldASCII(s, "cookie")
	},
	"secret": func(s string) bool { return len(s) >= 6 && hasSecretKey(s) },
	"email":  func(s string) bool { return len(s) >= 6 && strings.IndexByte(s, '@') >= 0 },
}

// apiKeyPrefixes are what every match of the api_key rule starts with.
var apiKeyPrefixes = []string{"sk-", "pk-", "rk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_",
	"AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "npm_", "hf_",
	"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "AIza", "eyJ"}

// hasSecretKey reports whether s holds what every match of a key=value rule holds: a ':' or
// '=' after a secret's name (blanks and a quote between them), or an '=' after a pwd that
// follows a '_', a '-' or a ';'. Text full of colons and equal signs after other words —
// "[REDACTED:private_key]" many times over — then costs no scan by the rules' regexps, which
// are slow (an NFA of a long alternation at every word boundary).
func hasSecretKey(s string) bool {
	for i := 0; i < len(s); i++ {
		j := strings.IndexAny(s[i:], ":=")
		if j < 0 {
			return false
		}
		i += j
		k := i
		for k > 0 && isSpace(s[k-1]) {
			k--
		}
		if s[i] == '=' && endsWithPwd(s[:k]) {
			return true
		}
		if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
			k--
		}
		if endsWithSecretWord(s[:k]) {
			return true
		}
	}
	return false
}

// isSpace is RE2's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// endsWithSecretWord reports whether s ends, in any case, as a secret's name does: token,
// secret, password, passwd, or key after api, access, secret or private (a '_' or '-' between).
func endsWithSecretWord(s string) bool {
	for _, w := range [...]string{"token", "secret", "password", "passwd"} {
		if hasSuffixFoldASCII(s, w) {
			return true
		}
	}
	if !hasSuffixFoldASCII(s, "key") {
		return false
	}
	s = s[:len(s)-3]
	if n := len(s); n > 0 && (s[n-1] == '_' || s[n-1] == '-') {
		s = s[:n-1]
	}
	return hasSuffixFoldASCII(s, "api") || hasSuffixFoldASCII(s, "access") ||
		hasSuffixFoldASCII(s, "secret") || hasSuffixFoldASCII(s, "private")
}

// endsWithPwd reports whether s ends with pwd, in any case, after a '_', a '-', or a ';' and
// blanks: the pwd rule's name.
func endsWithPwd(s string) bool {
	if !hasSuffixFoldASCII(s, "pwd") {
		return false
	}
	s = s[:len(s)-3]
	if n := len(s); n > 0 && (s[n-1] == '_' || s[n-1] == '-') {
		return true
	}
	s = strings.TrimRight(s, " \t\n\f\r")
	return strings.HasSuffix(s, ";")
}

// hasSuffixFoldASCII reports whether s ends with the lower-case ASCII word w in any case.
func hasSuffixFoldASCII(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	s = s[len(s)-len(w):]
	for i := 0; i < len(w); i++ {
		if s[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether s contains the lower-case ASCII word w, which starts with a
// letter, in any case.
func containsFoldASCII(s, w string) bool { return newFoldIndex(s, w).from(0) >= 0 }

// New compiles cfg. An invalid pattern or field path is an error naming it.
func New(cfg Config) (*Redactor, error) {
	r := &Redactor{replacement: cfg.Replacement}
	if r.replacement == "" {
		r.replacement = DefaultReplacement
	}
	fields := cfg.Fields
	if !cfg.NoDefaults {
		for _, b := range Builtin() {
			ru := rule{re: b.Pattern, repl: b.Replacement, expand: true, may: mayMatch[b.Name], valid: b.Valid}
			if named, own := ru.may, b.may; own != nil {
				ru.may = func(s string) bool { return named(s) && own(s) }
			}
			if ru.repl == "" {
				ru.repl, ru.expand = "[REDACTED:"+b.Name+"]", false
			}
			if ru.spans = b.spans; ru.spans == nil {
				ru.spans = barrierSpans(b.Pattern, ru.may)
			}
			r.rules = append(r.rules, ru)
		}
		fields = append(slices.Clone(defaultFields), fields...)
		r.secrets = true
	}
	for i, p := range cfg.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: patterns[%d] %q: %w", i, p, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redact: patterns[%d] %q matches the empty string", i, p)
		}
		r.rules = append(r.rules, rule{re: re, repl: r.replacement})
	}
	for i, f := range cfg.Fields {
		segs := strings.Split(strings.ToLower(f), ".")
		for j, s := range segs {
			if s == "" || (s == "**" && j != 0) || (s == "**" && len(segs) == 1) {
				return nil, fmt.Errorf("redact: fields[%d] %q: segment %d is invalid (empty, or ** other than as the first of several)", i, f, j+1)
			}
		}
	}
	for _, f := range fields {
		r.fields = append(r.fields, strings.Split(strings.ToLower(f), "."))
	}
	return r, nil
}

// MustNew is New that panics on error, for configurations fixed in code.
func MustNew(cfg Config) *Redactor {
	r, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// String returns s with every match of every rule replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	// The cheap tests and the spans read case as ASCII does, but (?i) also folds the long s (ſ)
	// to s and the Kelvin sign (K) to k: text with either gets every pattern run over it whole.
	// No built-in rule writes them, and caller patterns, which may, come after the built-in ones.
	exact := strings.Contains(s, "\u017F") || strings.Contains(s, "\u212A")
	for i := range r.rules {
		ru := &r.rules[i]
		if !exact && ru.may != nil && !ru.may(s) {
			continue
		}
		if !exact && ru.spans != nil {
			s = ru.replaceSpans(s)
			continue
		}
		if !ru.re.MatchString(s) {
			continue // MatchString allocates nothing; a replacement does
		}
		switch {
		case ru.valid != nil:
			s = ru.replaceValid(s)
		case ru.expand:
			s = ru.re.ReplaceAllString(s, ru.repl)
		default:
			s = ru.re.ReplaceAllLiteralString(s, ru.repl)
		}
	}
	return s
}

// replaceValid replaces the matches ru.valid confirms and leaves the others as they are.
func (ru *rule) replaceValid(s string) string {
	var b []byte
	last := 0
	for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
		if !ru.valid(s[m[0]:m[1]]) {
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
	if last == 0 {
		return s // nothing confirmed (no match is empty, so none ends at 0)
	}
	return string(append(b, s[last:]...))
}

// Value returns a redacted deep copy of a JSON value (as encoding/json decodes it: maps,
// slices, strings, numbers, booleans, nil; typed maps with string keys, typed lists of text
// and named string types are copied as the values JSON would decode them into —
// map[string]any, []any, string —; a json.RawMessage or []byte (named or not) is copied with
// its type, redacted as the JSON it holds — still valid JSON, re-encoded compact with sorted
// members — or, when it holds none, as text; lists of numbers or booleans, structs, pointers
// and other types are returned unchanged): strings with
// rules applied, values under matching field paths — and, with the defaults, under members
// named as a key=value secret's ("token", "DB_PASSWORD") — replaced whole, and map keys
// redacted too. A map or list that holds itself (Go values can; JSON cannot) is replaced where
// the cycle closes. v itself is not modified.
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	return r.value(v, nil, 0, nil)
}

// ValueAt is Value for a value found at path inside a larger document — path being the member
// names from the document's root, array positions left out (arrays are transparent to field
// paths) — so that field paths still apply to a part taken out of its document: a value at or
// below a matching field is replaced whole, and fields below it are matched by their full path.
// A nil path is the root: ValueAt(nil, v) is Value(v). Neither v nor path is modified.
func (r *Redactor) ValueAt(path []string, v any) any {
	if r == nil {
		return v
	}
	var buf [8]string // paths are short: most calls allocate none
	p := buf[:0]
	for _, k := range path {
		p = append(p, strings.ToLower(k))
		if r.fieldMatch(p) || r.secrets && isSecretMember(k) {
			return r.replacement
		}
	}
	return r.value(v, p, 0, nil)
}

const maxDepth = 1000

// container identifies a map or a non-empty list by where its contents are: a list by its first
// element and its length, so that a shorter slice of the same array is another list.
type container struct {
	p uintptr
	n int
}

// within reports whether c is one of anc, the containers a value is inside of — a cycle, which
// Go values can have and JSON cannot —, and otherwise returns anc with c added.
func within(anc []container, c container) ([]container, bool) {
	if slices.Contains(anc, c) {
		return anc, true
	}
	return append(anc, c), false
}

// value redacts v, found at path, depth levels down, inside the containers anc.
func (r *Redactor) value(v any, path []string, depth int, anc []container) any {
	if depth > maxDepth {
		return r.replacement
	}
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		var cyc bool
		if anc, cyc = within(anc, container{p: reflect.ValueOf(x).Pointer()}); cyc {
			return r.replacement // it is being redacted further up
		}
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := append(path, strings.ToLower(k))
			rk := r.String(k)
			if r.fieldMatch(p) || r.secrets && isSecretMember(k) {
				out[rk] = r.replacement
			} else {
				out[rk] = r.value(x[k], p, depth+1, anc)
			}
			path = p[:len(path)]
		}
		return out
	case []any:
		if len(x) > 0 {
			var cyc bool
			if anc, cyc = within(anc, container{reflect.ValueOf(&x[0]).Pointer(), len(x)}); cyc {
				return r.replacement
			}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e, path, depth+1, anc)
		}
		return out
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return r.value(m, path, depth, anc)
	case []string:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = e
		}
		return r.value(s, path, depth, anc)
	case json.RawMessage:
		return json.RawMessage(r.bytes(x, path, depth))
	case []byte:
		return r.bytes(x, path, depth)
	case nil, bool, float64, int, int64, json.Number:
		return v
	}
	return r.typed(v, path, depth, anc)
}

// bytes redacts what a json.RawMessage or a []byte holds: a JSON document decoded (numbers
// kept as written), redacted as a value found at path, then encoded again — valid JSON still,
// compact, its object members sorted —; anything else as text. Bytes that are not UTF-8 keep
// every byte no rule matches. The result is a new slice.
func (r *Redactor) bytes(b []byte, path []string, depth int) []byte {
	if len(b) == 0 {
		return slices.Clone(b)
	}
	if json.Valid(b) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false) // keep <, > and & as they were written
			// A decoded document has no cycle: its containers need no tracking.
			if enc.Encode(r.value(v, path, depth+1, nil)) == nil {
				return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
			}
		}
	}
	return []byte(r.String(string(b)))
}

// typed redacts the typed lists and maps Go code builds JSON-shaped values with
// ([]map[string]any, map[string][]string, http.Header, a named string type) as the same value
// decoded from JSON, and a named []byte as a []byte. Lists of numbers or booleans are
// returned unchanged, as are structs and pointers.
func (r *Redactor) typed(v any, path []string, depth int, anc []container) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return r.String(rv.String())
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v
		}
		// The copy is new: the cycle, if any, is the typed map's (type M map[string]M).
		var cyc bool
		if anc, cyc = within(anc, container{p: rv.Pointer()}); cyc {
			return r.replacement
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return r.value(m, path, depth, anc)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			// A named []byte: its contents redacted, its type kept.
			return reflect.ValueOf(r.bytes(rv.Bytes(), path, depth)).Convert(rv.Type()).Interface()
		}
		switch rv.Type().Elem().Kind() {
		case reflect.String, reflect.Interface, reflect.Map, reflect.Slice, reflect.Array:
			if rv.Kind() == reflect.Slice && rv.Len() > 0 {
				var cyc bool
				if anc, cyc = within(anc, container{rv.Pointer(), rv.Len()}); cyc {
					return r.replacement
				}
			}
			s := make([]any, rv.Len())
			for i := range s {
				s[i] = rv.Index(i).Interface()
			}
			return r.value(s, path, depth, anc)
		}
	}
	return v
}

func (r *Redactor) fieldMatch(path []string) bool {
	for _, f := range r.fields {
		if f[0] == "**" {
			if tail := f[1:]; len(path) >= len(tail) && segsMatch(tail, path[len(path)-len(tail):]) {
				return true
			}
			continue
		}
		if len(f) == len(path) && segsMatch(f, path) {
			return true
		}
	}
	return false
}

func segsMatch(pattern, path []string) bool {
	for i, p := range pattern {
		if p != "*" && p != path[i] {
			return false
		}
	}
	return true
}
