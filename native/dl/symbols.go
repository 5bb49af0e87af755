//go:build cgo

package dl

/*
#include "cuctx.h"
*/
import "C"

import "unsafe"

// Symbol is an entry point a native loader resolves: Name, looked up in
// Lib, stored into *Dst (a C function-pointer field of the loader's table,
// which cgo gives the Go type *[0]byte). An Optional symbol may be missing;
// its field stays nil.
type Symbol struct {
	Lib      *Library
	Name     string
	Dst      **[0]byte
	Optional bool
}

// Resolve looks up syms in order, filling each Dst. It fails on the first
// required symbol that is missing, and returns the address of the first
// symbol found (a loader uses it to find which file it loaded).
func Resolve(syms []Symbol) (first unsafe.Pointer, err error) {
	for _, s := range syms {
		p, err := s.Lib.Sym(s.Name)
		if err != nil {
			if s.Optional {
				continue
			}
			return nil, err
		}
		*s.Dst = (*[0]byte)(p)
		if first == nil {
			first = p
		}
	}
	return first, nil
}

// DriverSymbols are the CUDA driver entry points of cuctx.h's hc_cuda, to
// be resolved in cuda (libcuda.so.1) into the hc_cuda at table: a loader's
// own copy of the struct, which has this package's layout because both
// come from the one header.
func DriverSymbols(cuda *Library, table unsafe.Pointer) []Symbol {
	t := (*C.hc_cuda)(table)
	return []Symbol{
		{cuda, "cuInit", &t.init, false},
		{cuda, "cuDeviceGet", &t.deviceGet, false},
		{cuda, "cuDevicePrimaryCtxRetain", &t.primaryCtxRetain, false},
		{cuda, "cuDevicePrimaryCtxRelease_v2", &t.primaryCtxRelease, false},
		{cuda, "cuCtxGetCurrent", &t.ctxGetCurrent, false},
		{cuda, "cuCtxSetCurrent", &t.ctxSetCurrent, false},
		{cuda, "cuGetErrorName", &t.getErrorName, false},
	}
}
