// Package redact removes secrets and personal data from strings and JSON values before they
// leave the process: bearer tokens, API keys of well-known shapes, key=value secrets, email
// addresses, caller-supplied patterns, and whole values under caller-named JSON field paths.
//
// A Redactor is a pure function of its input — no I/O, no state — built once with New and
// shared freely. Package evidence applies one to every progress event it emits; stores,
// servers and loggers can apply the same one to whatever they write.
//
// Redaction is best effort by pattern: it catches the shapes it knows. Name sensitive fields
// explicitly (Config.Fields) for data whose shape no pattern can recognize.
package redact
