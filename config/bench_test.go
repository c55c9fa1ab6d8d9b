package config_test

import (
	"os"
	"testing"

	"github.com/troupehq/troupe/config"
)

// BenchmarkParse loads seed 000's configuration (17 agents, 8 intent rules, the parser's
// gazetteers): YAML, schema, references, and the planner's own validation.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("../examples/e2i/troupe.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := config.Parse("troupe.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseErrors loads a file with 15 problems, every one reported with its place.
func BenchmarkParseErrors(b *testing.B) {
	data, err := os.ReadFile("testdata/bad.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse("bad.yaml", data); err == nil {
			b.Fatal("no error")
		}
	}
}
