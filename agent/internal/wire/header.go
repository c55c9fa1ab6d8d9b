package wire

import "fmt"

// BadHeaderValue says why net/http would refuse to send v as a header's value — it holds a
// control character other than a tab; a newline would split the header — or "" when it would
// send it. It never quotes v, which may be a secret.
func BadHeaderValue(v string) string {
	for i := range len(v) {
		switch c := v[i]; {
		case c == '\n':
			return "it holds a newline"
		case c == '\r':
			return "it holds a carriage return"
		case c < ' ' && c != '\t' || c == 0x7f:
			return fmt.Sprintf("it holds control character 0x%02x", c)
		}
	}
	return ""
}
