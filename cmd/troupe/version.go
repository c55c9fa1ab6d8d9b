package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionUsage = `Usage: troupe version

Prints what troupe was built from, one a line: its module version, the VCS revision, that
revision's commit time, whether the working tree had changes not committed (modified), and
the Go version. What the build did not record (a build with -buildvcs=false, or outside a
repository) is unknown. troupe --version is the same.
`

const versionExits = `Exit codes: 0 the version was shown, 2 usage error.
`

// runVersion is `troupe version` (and `troupe --version`): the build's own record of itself,
// as runtime/debug.ReadBuildInfo gives it.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, code, done := parseCommand("version", fs, args, 0, 0, "no arguments", stdout, stderr); done {
		return code
	}
	bi, _ := debug.ReadBuildInfo()
	writeVersion(stdout, bi)
	return exitOK
}

// writeVersion prints the version lines of bi; a nil bi (a binary built without module
// support) records nothing but the Go version of the running program.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	const unknown = "unknown"
	version, goVersion := unknown, runtime.Version()
	settings := map[string]string{}
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	setting := func(key string) string {
		if v := settings[key]; v != "" {
			return v
		}
		return unknown
	}
	fmt.Fprintf(w, "troupe    %s\n", version)
	fmt.Fprintf(w, "revision  %s\n", setting("vcs.revision"))
	fmt.Fprintf(w, "time      %s\n", setting("vcs.time"))
	fmt.Fprintf(w, "modified  %s\n", setting("vcs.modified"))
	fmt.Fprintf(w, "go        %s\n", goVersion)
}
