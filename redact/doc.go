// Package redact removes secrets and personal data from strings and JSON values before they
// leave the process: bearer tokens, Basic credentials (padded base64 that decodes to a
// printable ASCII user:password), the userinfo of a URL that carries a password
// (postgres://app:pw@db, whole, user included), API keys of well-known shapes, the name=value
// pairs of Cookie and Set-Cookie headers, key=value secrets, email addresses, caller-supplied
// patterns, and whole values under caller-named JSON field paths (and, by default, under
// members named authorization, cookie, set-cookie, password, token and the like).
//
// A Redactor is a pure function of its input — no I/O, no state — built once with New and
// shared freely. Package evidence applies one to every progress event it emits; stores,
// servers and loggers can apply the same one to whatever they write.
//
// Redaction is best effort by pattern: it catches the shapes it knows. It does not catch card
// numbers, IBANs or phone numbers (a number's shape alone cannot tell them from an order id:
// they need a checksum and context to avoid false matches), names or postal addresses, a URL
// whose user has no password (ssh://git@host), a Basic credential in another charset than
// ASCII, or a known shape hidden by an encoding (an API key in base64). Name sensitive fields
// explicitly (Config.Fields) for data whose shape no pattern can recognize.
package redact
