package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// troupe version and troupe --version print the same five lines, each a name and a value,
// and exit 0; an argument is a usage error.
func TestVersion(t *testing.T) {
	code, first, stderr := invoke(t, "version")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(first, "\n"), "\n")
	var names []string
	for _, l := range lines {
		name, value, _ := strings.Cut(l, " ")
		if strings.TrimSpace(value) == "" {
			t.Errorf("line %q has no value", l)
		}
		names = append(names, name)
	}
	if diff := cmp.Diff([]string{"troupe", "revision", "time", "modified", "go"}, names); diff != "" {
		t.Errorf("lines (-want +got):\n%s\n%s", diff, first)
	}
	if want := "go        " + runtime.Version() + "\n"; !strings.HasSuffix(first, want) {
		t.Errorf("output does not end with %q:\n%s", want, first)
	}
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != exitOK || stderr != "" || stdout != first {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", args, code, stderr, stdout, first)
		}
	}
	code, stdout, stderr := invoke(t, "version", "extra")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "troupe version: want no arguments, got 1 argument") {
		t.Errorf("version extra: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// The lines come from the build's record of itself; what it does not record is unknown.
func TestWriteVersion(t *testing.T) {
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"from a repository", &debug.BuildInfo{
			GoVersion: "go1.26.1",
			Main:      debug.Module{Path: "github.com/troupehq/troupe", Version: "v0.3.0"},
			Settings: []debug.BuildSetting{
				{Key: "-compiler", Value: "gc"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "dd6705db48a6343adb32deb271e145c676ccebea"},
				{Key: "vcs.time", Value: "2026-11-28T02:27:27Z"},
				{Key: "vcs.modified", Value: "false"},
			},
		}, "troupe    v0.3.0\nrevision  dd6705db48a6343adb32deb271e145c676ccebea\ntime      2026-11-28T02:27:27Z\nmodified  false\ngo        go1.26.1\n"},
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}},
			"troupe    (devel)\nrevision  unknown\ntime      unknown\nmodified  unknown\ngo        go1.26.1\n"},
		{"no build info", nil,
			"troupe    unknown\nrevision  unknown\ntime      unknown\nmodified  unknown\ngo        " + runtime.Version() + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeVersion(&b, tt.bi)
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
