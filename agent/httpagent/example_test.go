package httpagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/httpagent"
)

// A service in any language becomes an agent: it receives the dispatch as JSON and answers
// with a result. Its token comes from the environment, never from the configuration.
func Example() {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d troupe.Dispatch
		json.NewDecoder(r.Body).Decode(&d)
		now := time.Now().UTC()
		json.NewEncoder(w).Encode(map[string]any{
			"dispatch_id": d.DispatchID, "session_id": d.SessionID, "query_id": d.QueryID, "agent_name": d.TargetAgent,
			"status": "completed", "agent_result": map[string]any{"shout": strings.ToUpper(d.Query),
				"authorized": r.Header.Get("Authorization") == "Bearer "+os.Getenv("SHOUT_TOKEN")},
			"errors": []any{}, "warnings": []any{}, "execution_time_ms": 0, "started_at": now, "completed_at": now,
		})
	}))
	defer svc.Close()
	os.Setenv("SHOUT_TOKEN", "example-token")

	a, err := httpagent.New(httpagent.Config{URL: svc.URL, BearerTokenEnv: "SHOUT_TOKEN", Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.CloseIdleConnections()
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = troupe.NewDispatchID(1), "sess_1", "qry_1"
	d.TargetAgent, d.DispatchReason, d.Query = "shouter", "example", "hello"
	res, err := a.Run(context.Background(), d)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.AgentResult["shout"], res.AgentResult["authorized"])
	// Output: completed HELLO true
}
