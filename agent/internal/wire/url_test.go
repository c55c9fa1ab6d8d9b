package wire_test

import (
	"net/url"
	"slices"
	"testing"

	"github.com/troupehq/troupe/agent/internal/wire"
)

func TestShownURLMasksSecrets(t *testing.T) {
	for _, tc := range []struct {
		raw, shown string
		secrets    []string
	}{
		{"https://api.example.com/v1", "https://api.example.com/v1", nil},
		{"http://bob:hunter2@h/x", "http://bob:xxxxx@h/x", []string{"hunter2"}},
		{"https://h/x?api_key=abc&region=eu", "https://h/x?api_key=xxxxx&region=eu", []string{"abc"}},
		{"https://h/x?v=2024-06-01&k=sk3Fh9aPq2LmZx7Rt4Wv", "https://h/x?k=xxxxx&v=2024-06-01", []string{"sk3Fh9aPq2LmZx7Rt4Wv"}},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		shown, secrets := wire.ShownURL(u)
		if shown != tc.shown || !slices.Equal(secrets, tc.secrets) {
			t.Errorf("ShownURL(%s) = %s, %q; want %s, %q", tc.raw, shown, secrets, tc.shown, tc.secrets)
		}
	}
}
