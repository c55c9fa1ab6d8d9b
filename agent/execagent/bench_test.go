package execagent_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/troupehq/troupe/agent/execagent"
)

// BenchmarkExecAgent measures process start to validated result for a prebuilt Go agent.
// BenchmarkExecFloor runs the same binary with plain os/exec and no checks, so the difference
// is what execagent adds (process group, pipes, stderr lines, validation).
func BenchmarkExecAgent(b *testing.B) {
	bin := buildGoAgent(b, b.TempDir())
	a := newAgent(b, execagent.Config{Command: []string{bin}})
	d := dispatch("three little words", nil, &runtime{traceID: "trace_1"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(b.Context(), d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecFloor(b *testing.B) {
	bin := buildGoAgent(b, b.TempDir())
	in, _ := json.Marshal(dispatch("three little words", nil, nil))
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command(bin)
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil || len(out) == 0 {
			b.Fatal(err)
		}
	}
}
