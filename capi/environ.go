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

// syncEnviron makes Go's environment the C environment's. A Go shared
// library takes its copy of the environment when it is loaded, so variables
// the host program sets or unsets afterwards (Python's os.environ, before
// hiercoll.init()) are not seen by os.Getenv unless copied over; the C
// environment wins, removals included. (Go's os.Setenv also sets the C
// variable, so nothing Go set is lost.) Each entry point that reads the
// environment calls it first.
func syncEnviron() {
	c := map[string]string{}
	for i := 0; ; i++ {
		p := C.hc_environ_at(C.int(i))
		if p == nil {
			break
		}
		if k, v, ok := strings.Cut(C.GoString(p), "="); ok && k != "" {
			if _, dup := c[k]; !dup { // getenv takes the first
				c[k] = v
			}
		}
	}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			if _, set := c[k]; !set {
				_ = os.Unsetenv(k)
			}
		}
	}
	for k, v := range c {
		if cur, set := os.LookupEnv(k); !set || cur != v {
			_ = os.Setenv(k, v)
		}
	}
}
