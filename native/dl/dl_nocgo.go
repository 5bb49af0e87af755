//go:build !cgo

package dl

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrNotFound is returned when no candidate library could be opened.
var ErrNotFound = errors.New("shared library not found")

// Library is an open shared library (never, without cgo).
type Library struct{ Path string }

// Open always fails: this binary was built without cgo.
func Open(candidates ...string) (*Library, error) {
	return nil, fmt.Errorf("dl: cannot open %s: built without cgo: %w", strings.Join(candidates, ", "), ErrNotFound)
}

// Sym always fails.
func (l *Library) Sym(name string) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("dl: built without cgo")
}

// Close does nothing.
func (l *Library) Close() error { return nil }
