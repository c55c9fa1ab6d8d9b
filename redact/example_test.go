package redact_test

import (
	"fmt"

	"github.com/troupehq/troupe/redact"
)

func ExampleRedactor_Value() {
	r := redact.MustNew(redact.Config{Fields: []string{"patient.name"}})
	v := r.Value(map[string]any{
		"patient": map[string]any{"name": "Jane Roe", "age": 52.0},
		"note":    "call jane@example.com, header Bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
	})
	fmt.Println(v)
	// Output:
	// map[note:call [REDACTED:email], header [REDACTED:bearer] patient:map[age:52 name:[REDACTED]]]
}
