package httpagent_test

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/troupehq/troupe/agent/httpagent"
)

// The largest MaxResponseBytes the config schema accepts (math.MaxInt64) reads a response as any
// other bound does. The read's limit, one past the bound, overflowed to a negative one, so
// nothing was read and every answer was "invalid result: empty output".
func TestMaxResponseBytesAtInt64Max(t *testing.T) {
	srv := httptest.NewServer(counter(t, nil))
	defer srv.Close()
	a := newAgent(t, httpagent.Config{URL: srv.URL, MaxResponseBytes: math.MaxInt64})
	res, err := a.Run(context.Background(), dispatch("one two three"))
	if err != nil {
		t.Fatalf("a valid result under the largest bound was refused: %v", err)
	}
	if got := res.AgentResult["words"]; got != float64(3) && got != 3 {
		t.Errorf("agent_result.words = %v, want 3", got)
	}
}
