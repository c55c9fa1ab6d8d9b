package llmagent_test

import (
	"errors"
	"testing"

	"github.com/troupehq/troupe/agent/llmagent"
)

// A base_url with no host can never be called; New refuses it at base_url, as httpagent.New does
// such a URL. It was accepted, troupe validate said ok, and every dispatch failed after retries
// with net/http's "no Host in request URL".
func TestBaseURLWithoutHost(t *testing.T) {
	for _, u := range []string{"http://", "http:///v1"} {
		_, err := llmagent.New(llmagent.Config{Model: "m", BaseURL: u})
		if err == nil {
			t.Errorf("BaseURL %q: New accepted a URL with no host", u)
			continue
		}
		if ce, ok := errors.AsType[*llmagent.ConfigError](err); !ok || len(ce.Problems) == 0 || ce.Problems[0].Field != "base_url" {
			t.Errorf("BaseURL %q: error %v is not a ConfigError at base_url", u, err)
		}
	}
}
