//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// termWidth returns the width of the terminal w is, or 0 when it is not one or cannot say.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// terminal reports whether f is a terminal: one that has a window size.
func terminal(f *os.File) bool {
	_, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return err == nil
}
