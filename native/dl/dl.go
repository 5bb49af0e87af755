//go:build cgo

// Package dl opens shared libraries at run time (dlopen) and looks up their
// symbols, so that hiercoll builds and runs on machines without CUDA, NCCL or
// NVSHMEM: a missing library is an ordinary error, reported when first needed.
//
// Only the native loaders (device/cuda and the packages under native/) use
// it; callers get a symbol's address and call it through a cgo trampoline of
// their own that knows the C signature.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// ErrNotFound is returned when no candidate library could be opened.
var ErrNotFound = errors.New("shared library not found")

// Library is an open shared library.
type Library struct {
	Path   string // the name or path that opened
	handle unsafe.Pointer
	mu     sync.Mutex
}

// Open tries each candidate (a file name for the loader's search path, or an
// absolute path) in order and returns the first that opens. The error names
// every candidate and the loader's reason for the first one.
func Open(candidates ...string) (*Library, error) {
	var reasons []string
	for _, name := range candidates {
		cname := C.CString(name)
		h := C.dlopen(cname, C.RTLD_NOW|C.RTLD_GLOBAL)
		C.free(unsafe.Pointer(cname))
		if h != nil {
			return &Library{Path: name, handle: h}, nil
		}
		reasons = append(reasons, C.GoString(C.dlerror()))
	}
	return nil, fmt.Errorf("dl: none of %s could be opened (%s): %w",
		strings.Join(candidates, ", "), strings.Join(reasons, "; "), ErrNotFound)
}

// Sym returns the address of symbol name, or an error naming it.
func (l *Library) Sym(name string) (unsafe.Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("dl: %s: library closed", l.Path)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	C.dlerror() // clear
	p := C.dlsym(l.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("dl: %s has no symbol %s: %s", l.Path, name, C.GoString(C.dlerror()))
	}
	return p, nil
}

// Close unloads the library.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	if C.dlclose(l.handle) != 0 {
		return fmt.Errorf("dl: close %s: %s", l.Path, C.GoString(C.dlerror()))
	}
	l.handle = nil
	return nil
}
