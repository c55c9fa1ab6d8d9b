package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// troupe run warns of an unset (or empty) api_key_env as validate does, on stderr, before the
// model is first called, and runs all the same: the model here is a server that needs no key.
func TestRunWarnsOfUnsetAPIKeyEnv(t *testing.T) {
	var (
		mu     sync.Mutex  // guards stderr and before
		stderr *syncBuffer // the run's
		before []string    // stderr when each request reached the model
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		before = append(before, stderr.String())
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 0, "model": "x",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "hello"}}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
	}))
	defer srv.Close()
	yaml := fmt.Sprintf("version: 1\nagents:\n  m:\n    kind: llm\n    llm:\n      model: x\n      api_key_env: TROUPE_TEST_KEY\n      base_url: %s/v1/\n", srv.URL)
	const warning = ":7:20: warning: agents.m.llm.api_key_env: the environment variable TROUPE_TEST_KEY is not set here: the model will be called with no API key, which only a server that needs none accepts\n"
	for _, tt := range []struct {
		name  string
		value *string
		warns bool
	}{
		{"unset", nil, true},
		{"set", new("k"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.value == nil {
				unsetenv(t, "TROUPE_TEST_KEY")
			} else {
				t.Setenv("TROUPE_TEST_KEY", *tt.value)
			}
			errOut := &syncBuffer{}
			mu.Lock()
			stderr, before = errOut, nil
			mu.Unlock()
			dir := writeConfig(t, yaml)
			var stdout bytes.Buffer
			code := run(t.Context(), []string{"run", dir, "hi"}, &stdout, errOut)
			if code != exitOK {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), errOut.String())
			}
			want := ""
			if tt.warns {
				want = filepath.Join(dir, "troupe.yaml") + warning
			}
			if got := errOut.String(); got != want {
				t.Errorf("stderr:\n%q\nwant:\n%q", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(before) == 0 || before[0] != want {
				t.Errorf("stderr when the model was called: %q, want %q", before, want)
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
