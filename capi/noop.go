package main

// main is required of a main package and never runs in a shared library. It
// lives in a file without cgo so that the package also builds (as an empty
// program) with CGO_ENABLED=0.
func main() {}
