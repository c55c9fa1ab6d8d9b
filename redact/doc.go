// Package redact removes secrets and personal data from strings and JSON values before they
// leave the process: PEM private keys, bearer tokens, Basic credentials (padded base64 that
// decodes to a printable ASCII user:password), the value of an Authorization or
// Proxy-Authorization header whatever its scheme (Token, Digest, Negotiate, …), the userinfo of
// a URL that carries a password (postgres://app:pw@db, whole, user included), the secret a
// webhook URL carries in its path (Slack's hooks.slack.com/services/T…/B…/<secret>, its
// workflows' and triggers'; Discord's /api/webhooks/<id>/<token>) and a Telegram bot's token
// in its API URL (/bot<id>:<token>/sendMessage), the rest of the URL kept, API keys of
// well-known shapes (AWS key ids, GitHub, GitLab, Slack, Stripe, OpenAI's sk- and sk-proj-,
// Anthropic's sk-ant-, JWTs), the
// name=value pairs of Cookie and Set-Cookie headers, key=value secrets (FOO_API_KEY=…,
// PGPASSWORD=…, ;Pwd=… in a connection string; in a URL query the secret parameter's value
// alone, the others kept), email addresses (not file names such as icon@2x.png),
// caller-supplied patterns, and whole values under caller-named JSON field paths (and, by
// default, under members named authorization, cookie, set-cookie, password, token and the
// like). JSON held as bytes (json.RawMessage, []byte) is redacted as the document it holds.
//
// What it leaves alone, by decision: the word "token" or "secret" in prose with no key=value
// shape ("the token expired"), counts named like secrets (max_tokens=4096), hex commit ids and
// digests, and UUIDs — ids, not credentials, and what a reader of a run's evidence needs; and
// the words of an error message that names a secret without holding one. A bare (unquoted)
// value after a secret's name is kept when it is a placeholder — expired, missing, required,
// invalid, none, null, empty, redacted, unset, undefined and the like, in any case
// ("password: required", "TOKEN=none", "token: <redacted>") — or when it is a lone word of
// letters (lower-case, or capitalized) after a colon and a name that a qualifier — invalid,
// missing, expired, revoked, malformed, bad, wrong, incorrect, unknown, empty, no — comes up
// to two words before ("invalid token: malformed", "missing access token: please log in").
// Anything else after the name is a secret: a value with a digit or a symbol
// ("password: hunter22"), a quoted one ({"password": "required"} is data), one after no
// qualifier ("password: hunter", as YAML writes it), one in a URL query. A secret whose value is
// a placeholder word, or a lower-case word that an error message prints after a qualifier,
// is therefore not caught. Whatever follows "Authorization:" is taken for a credential.
// A secret first in a form body with no "?" before it (token=abc&page=2) is its value alone, as
// after "?" or "&": the parameters after it stay.
//
// A Redactor is a pure function of its input — no I/O, no state — built once with New and
// shared freely. Package evidence applies one to every progress event it emits; stores,
// servers and loggers can apply the same one to whatever they write.
//
// Redaction is best effort by pattern: it catches the shapes it knows. It does not catch card
// numbers, IBANs or phone numbers (a number's shape alone cannot tell them from an order id:
// they need a checksum and context to avoid false matches), names or postal addresses, a URL
// whose user has no password (ssh://git@host), a Basic credential in another charset than
// ASCII, a secret in the path of another service's URL (a long path segment is as often a
// commit id, a UUID, a digest or an opaque id, which a reader needs, as a credential: only the
// shapes above are redacted), a bare key=value secret of fewer than four
// characters outside a URL query, or a known shape hidden by an encoding (an API key in
// base64). Name sensitive fields
// explicitly (Config.Fields) for data whose shape no pattern can recognize.
package redact
