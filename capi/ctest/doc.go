// Package ctest tests hiercoll's C ABI from outside Go: its tests build the
// shared library (capi), compile a C program against it (testdata/main.c)
// that drives a simulated 2 x 2 world from 4 threads, run the ctypes tests
// of the Python package against it, and install the package with no network
// (python/tests/test_install.py: pip into fresh virtual environments, from
// the checkout and from a wheel). They skip, with the reason, where gcc, cgo
// or python3 is missing.
package ctest
