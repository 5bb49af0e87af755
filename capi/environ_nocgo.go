//go:build !cgo

package main

// syncEnviron has nothing to do without cgo: there is no C environment to
// copy (and no shared library to be loaded into a C program).
func syncEnviron() {}
