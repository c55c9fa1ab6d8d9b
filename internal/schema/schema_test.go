package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe/internal/schema"
)

const quiz = `{
  "type": "object",
  "required": ["quiz_score", "quiz_complete"],
  "properties": {
    "quiz_score": {"type": "number", "minimum": 0, "maximum": 1},
    "quiz_complete": {"type": "boolean"},
    "questions": {"type": "array", "items": {"type": "string"}}
  }
}`

func TestValidate(t *testing.T) {
	s, err := schema.Compile("quiz output", json.RawMessage(quiz))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value any
		want  []schema.Problem
	}{
		{"valid, Go types", map[string]any{"quiz_score": 0.5, "quiz_complete": true, "questions": []string{"a"}}, nil},
		{"valid, int", map[string]any{"quiz_score": 1, "quiz_complete": false}, nil},
		{"missing field", map[string]any{"quiz_score": 0.5}, []schema.Problem{{Path: "", Message: "missing property 'quiz_complete'"}}},
		{"several problems with paths", map[string]any{"quiz_score": 1.5, "quiz_complete": "yes", "questions": []any{"a", 2}}, []schema.Problem{
			{Path: "/questions/1", Message: "got number, want string"},
			{Path: "/quiz_complete", Message: "got string, want boolean"},
			{Path: "/quiz_score", Message: "maximum: got 1.5, want 1"},
		}},
		{"not an object", []int{1}, []schema.Problem{{Path: "", Message: "got array, want object"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tt.value)
			var got []schema.Problem
			if err != nil {
				got = err.(*schema.Error).Problems
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, raw := range []string{`{`, `{"type": 5}`, `{"$schema": "http://example.com/nope"}`} {
		if _, err := schema.Compile("x input", json.RawMessage(raw)); err == nil {
			t.Errorf("Compile(%s) = nil error", raw)
		}
	}
}

// Whatever an agent is called, its schema compiles, and its internal references resolve.
func TestCompileAnyName(t *testing.T) {
	raw := json.RawMessage(`{"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}`)
	for _, name := range []string{"tutor input", "a#b input", "50% input", "a?b input", "é input", "../x input", ""} {
		s, err := schema.Compile(name, raw)
		if err != nil {
			t.Errorf("Compile(%q): %v", name, err)
			continue
		}
		if err := s.Validate(map[string]any{"a": 1}); err == nil {
			t.Errorf("%q: $ref not applied", name)
		}
	}
}

func TestDrafts(t *testing.T) {
	// Draft 4's exclusiveMaximum is a boolean; 2020-12's is a number: $schema picks the draft.
	d4, err := schema.Compile("d4", json.RawMessage(`{"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 1, "exclusiveMaximum": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if d4.Validate(1) == nil {
		t.Error("draft 4: 1 accepted with exclusiveMaximum true")
	}
	d2020, err := schema.Compile("d2020", json.RawMessage(`{"exclusiveMaximum": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if d2020.Validate(1) == nil || d2020.Validate(0.5) != nil {
		t.Error("2020-12 exclusiveMaximum not applied")
	}
}

func FuzzCompile(f *testing.F) {
	f.Add([]byte(quiz))
	f.Add([]byte(`{"type": ["string", "null"]}`))
	f.Add([]byte(`true`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := schema.Compile("fuzz", raw)
		if err != nil {
			return
		}
		_ = s.Validate(map[string]any{"a": 1})
	})
}

// A value that fails through a $ref is reported as what is wrong with it, not as the
// reference's own "validation failed": schemas generated from typed models (Pydantic's $defs,
// zod's definitions) are made of refs, and an agent author needs the reason to fix an output.
func TestValidateThroughRef(t *testing.T) {
	s, err := schema.Compile("risk output", json.RawMessage(`{"type": "object",
		"$defs": {"score": {"type": "number", "minimum": 0, "maximum": 1},
			"level": {"enum": ["low", "high"]},
			"risk": {"type": "object", "properties": {"score": {"$ref": "#/$defs/score"}, "level": {"$ref": "#/$defs/level"}}}},
		"properties": {"score": {"$ref": "#/$defs/score"}, "risk": {"$ref": "#/$defs/risk"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(map[string]any{"score": "high", "risk": map[string]any{"score": 1.5, "level": "mid"}})
	var got []schema.Problem
	if err != nil {
		got = err.(*schema.Error).Problems
	}
	want := []schema.Problem{
		{Path: "/risk/level", Message: "value must be one of 'low', 'high'"},
		{Path: "/risk/score", Message: "maximum: got 1.5, want 1"},
		{Path: "/score", Message: "got string, want number"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
