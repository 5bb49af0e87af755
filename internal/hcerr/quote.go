package hcerr

import (
	"fmt"
	"strconv"
)

// QuoteLimit is how many bytes of an untrusted value Quote keeps.
const QuoteLimit = 64

// Quote quotes a value that came from outside the process (a store value, a
// peer's frame, an environment variable, a flag) for an error message: Go
// quoting, cut to its first QuoteLimit bytes with its length when longer, so
// that a hostile or corrupt value of megabytes gives an error of a line.
func Quote(s string) string {
	if len(s) <= QuoteLimit {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:QuoteLimit]), len(s))
}

// QuoteBytes is Quote for a byte slice.
func QuoteBytes(b []byte) string {
	if len(b) > QuoteLimit {
		return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(b[:QuoteLimit])), len(b))
	}
	return strconv.Quote(string(b))
}
