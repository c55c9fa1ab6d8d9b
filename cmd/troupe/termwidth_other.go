//go:build !unix

package main

import (
	"io"
	"os"
)

// termWidth returns 0: the width of a terminal is not known here, and the live view keeps to
// its default width.
func termWidth(io.Writer) int { return 0 }

// terminal reports whether f is a character device, which is as near as this platform's
// check goes to a terminal.
func terminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
