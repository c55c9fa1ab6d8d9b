package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An llm agent's api_key_env that is not set (or empty) here is a warning of validate, at the
// field's value, and the exit code stays 0: the variable may be set where the workflow runs.
// A set one, or none named (the default, which a local server does without), is not.
func TestValidateWarnsOfUnsetAPIKeyEnv(t *testing.T) {
	const yaml = "version: 1\nagents:\n  m:\n    kind: llm\n    llm:\n      model: x\n      api_key_env: TROUPE_TEST_KEY\n  d: {kind: llm, llm: {model: x}}\n"
	const warning = ":7:20: warning: agents.m.llm.api_key_env: the environment variable TROUPE_TEST_KEY "
	for _, tt := range []struct {
		name   string
		value  *string
		wanted string // the end of the warning; "" for none
	}{
		{"unset", nil, "is not set here: the model will be called with no API key, which only a server that needs none accepts\n"},
		{"empty", new(""), "is empty here: the model will be called with no API key, which only a server that needs none accepts\n"},
		{"set", new("k"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "") // d's default: never warned of
			if tt.value == nil {
				unsetenv(t, "TROUPE_TEST_KEY")
			} else {
				t.Setenv("TROUPE_TEST_KEY", *tt.value)
			}
			dir := writeConfig(t, yaml)
			code, stdout, stderr := invoke(t, "validate", dir)
			if code != exitOK || !strings.Contains(stdout, ": ok — 2 agents") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			want := ""
			if tt.wanted != "" {
				want = filepath.Join(dir, "troupe.yaml") + warning + tt.wanted
			}
			if stderr != want {
				t.Errorf("stderr:\n%q\nwant:\n%q", stderr, want)
			}
		})
	}
}

// unsetenv unsets key for the test; t.Setenv, called first, restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
