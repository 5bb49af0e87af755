//go:build cgo

package main

/*
#include <stdlib.h>
extern char **environ;
static char *hc_environ_at(int i) { return environ[i]; }
*/
import "C"

import (
	"os"
	"strings"
)

// syncEnviron copies the C environment into Go's. A Go shared library takes
// its copy of the environment when it is loaded, so variables the host
// program sets afterwards (Python's os.environ, before hiercoll.init()) are
// not seen by os.Getenv unless copied over; the C environment wins.
func syncEnviron() {
	for i := 0; ; i++ {
		p := C.hc_environ_at(C.int(i))
		if p == nil {
			return
		}
		if k, v, ok := strings.Cut(C.GoString(p), "="); ok && k != "" {
			if cur, set := os.LookupEnv(k); !set || cur != v {
				_ = os.Setenv(k, v)
			}
		}
	}
}
