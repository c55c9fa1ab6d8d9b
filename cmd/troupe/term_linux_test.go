package main

import (
	"os"
	"testing"
)

// run draws its live view (cursor movement, a spinner) only on a terminal that understands it:
// not on /dev/null, which is a character device but no terminal, nor under TERM=dumb.
func TestLiveViewOnlyOnATerminal(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, tt := range []struct {
		name string
		f    *os.File
		term string
		want bool
	}{
		{"terminal", pty, "xterm-256color", true},
		{"terminal without TERM", pty, "", true},
		{"dumb terminal", pty, "dumb", false},
		{"/dev/null", null, "xterm-256color", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TERM", tt.term)
			if got := isTerminal(tt.f); got != tt.want {
				t.Errorf("isTerminal = %v, want %v", got, tt.want)
			}
		})
	}
}
