//go:build !unix

package main

import "io"

// termWidth returns 0: the width of a terminal is not known here, and the live view keeps to
// its default width.
func termWidth(io.Writer) int { return 0 }
