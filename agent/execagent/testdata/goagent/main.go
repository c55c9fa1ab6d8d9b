// Command goagent is a troupe exec agent in Go: it reads a dispatch on stdin, reports progress
// on stderr and writes its result on stdout. It counts the words of the query.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

type dispatch struct {
	DispatchID  string         `json:"dispatch_id"`
	SessionID   string         `json:"session_id"`
	QueryID     string         `json:"query_id"`
	TargetAgent string         `json:"target_agent"`
	Query       string         `json:"query"`
	ParsedQuery map[string]any `json:"parsed_query"`
}

func main() {
	start := time.Now().UTC()
	var d dispatch
	if err := json.NewDecoder(os.Stdin).Decode(&d); err != nil {
		fmt.Fprintln(os.Stderr, "goagent: reading the dispatch:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "counting words")
	words := strings.Fields(d.Query)
	end := time.Now().UTC()
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"dispatch_id": d.DispatchID, "session_id": d.SessionID, "query_id": d.QueryID, "agent_name": d.TargetAgent,
		"status":            "completed",
		"agent_result":      map[string]any{"words": len(words), "first": first(words), "trace": os.Getenv("TRACEPARENT")},
		"analysis_summary":  fmt.Sprintf("%d words", len(words)),
		"confidence":        0.9,
		"errors":            []any{},
		"warnings":          []any{},
		"training_signals":  []any{},
		"execution_time_ms": end.Sub(start).Milliseconds(),
		"started_at":        start.Format(time.RFC3339Nano),
		"completed_at":      end.Format(time.RFC3339Nano),
	})
}

func first(w []string) string {
	if len(w) == 0 {
		return ""
	}
	return w[0]
}
