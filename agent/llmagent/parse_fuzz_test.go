package llmagent

import (
	"encoding/json"
	"testing"
)

// FuzzParseAnswer feeds arbitrary model output to the answer parser: it must never panic,
// and whatever it accepts must satisfy the schema (wrapped under "value" when not an object).
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"name":"Ada","age":3}`, "```json\n{\"name\":\"x\",\"age\":1}\n```", "```", `[1,2]`, `{"age":-1}`, "", "plain text", "```\n```"} {
		f.Add(s)
	}
	c, err := compile(Config{Model: "m", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"]}`)})
	if err != nil {
		f.Fatal(err)
	}
	text, err := compile(Config{Model: "m"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		if out, err := c.parse(answer); err == nil {
			if verr := c.schema.Validate(out); verr != nil {
				t.Fatalf("accepted %q as %v, which fails the schema: %v", answer, out, verr)
			}
		}
		if out, err := text.parse(answer); err == nil && out["text"] != answer {
			t.Fatalf("text answer %q became %v", answer, out)
		}
	})
}
