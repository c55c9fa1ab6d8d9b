// Package cassette records an agent's HTTP exchanges — with an LLM endpoint, an HTTP agent —
// to a file and replays them, so a workflow with such agents can be tested deterministically
// and offline.
//
// A Cassette works at the http.RoundTripper level: give its Transport to the client an agent
// uses (the OpenAI SDK's option.WithHTTPClient, httpagent.Config.Client).
//
//	c, err := cassette.New("testdata/codegen.json", cassette.Config{Mode: cassette.ModeAuto})
//	client := &http.Client{Transport: c.Transport(http.DefaultTransport)}
//	... run the workflow ...
//	err = c.Save() // writes the file when recording; does nothing when replaying
//
// Modes: ModeRecord sends every request to the network and records it; ModeReplay (the zero
// value) serves recorded exchanges and never reaches the network; ModeAuto replays when the
// file exists and records when it does not. ParseMode reads a mode from an environment
// variable, so a test suite can be re-recorded with one switch.
//
// # Matching
//
// A request matches a recorded one when the method, the URL and the normalized body are equal.
// The URL is compared after redaction with its query parameters sorted; a JSON body is
// compared as JSON (key order and insignificant space do not matter, array order does), any
// other body byte for byte; headers are not compared. Secrets are redacted on both sides before
// comparing, so a replay matches whatever key the test happens to hold. Equal requests are
// served in the order they were recorded, each once: a recorded 500 then 200 replays as a 500
// then a 200. A request with nothing left to serve fails with an error wrapping ErrNoMatch that
// names the method, URL, the start of the body and the cassette file — never a silent network
// call. Unused lists recorded exchanges a replay did not ask for.
//
// # Secrets
//
// Before anything is written, the values of the Authorization, Proxy-Authorization, Api-Key,
// X-Api-Key, Cookie and Set-Cookie headers, of the api-key, api_key, apikey, access_token and
// key query parameters, and of URL user info are replaced by Redacted, as are the caller's
// Config.RedactHeaders, RedactQuery, RedactJSONPaths (in request and response JSON bodies) and
// RedactPatterns (in URLs, header values and body text). Date and Content-Length are dropped.
// The secrets a request itself carries — the values of those headers (and the credential after
// "Bearer "), of those query parameters and of its URL's password, when 8 bytes or longer — are
// also replaced wherever they appear in its exchange, so a server that echoes a key back (a 401
// quoting it, a debug header, a stream) cannot put it in the file.
//
// # Streams
//
// A response body is handed to the caller as it arrives and recorded as it is read; the
// exchange is recorded when the caller reads to the end or closes the body. A
// text/event-stream response is stored one event per entry and replayed one event per read,
// byte for byte.
//
// # File
//
// The file is indented JSON (see File): JSON bodies appear as JSON, text as text, binary as
// base64; interactions are sorted by what replay matches on, so re-recording the same
// exchanges gives the same file. Save writes it atomically.
package cassette
