// Command capi is hiercoll's C ABI, built as a shared library for callers
// that are not Go — above all PyTorch, through the ctypes package in python/:
//
//	go build -buildmode=c-shared -o build/libhiercoll.so ./capi   (scripts/build-capi.sh)
//
// hiercoll.h in this directory is the documented header; the header the Go
// tool writes beside the library declares the same functions. The cgo
// preamble includes hiercoll.h, so a prototype there that disagrees with
// an exported Go signature fails the build.
//
// Nothing of Go crosses the boundary: objects are integer handles into a
// table on the Go side (table.go), device memory and streams are plain
// 64-bit addresses and CUstream values, and messages are copied into the
// caller's buffer. Each exported function (exports.go) converts its C
// arguments, calls the Go function that does the work (api.go) and turns an
// error into a code and a message kept for the calling OS thread
// (errors.go).
//
// The hot path, hc_rs2d_reduce_scatter, takes the table's one mutex once to
// find the context and the cached wrapper of the caller's stream, and then
// calls rs2d.Context.ReduceScatter; it allocates nothing of its own.
//
// The library must not link the topology probes (package topo and go-nvml):
// their unresolved NVML symbols make a shared library fail to load with
// RTLD_NOW, as Python's ctypes loads it. deps_test.go checks this.
package main

/*
#include "hiercoll.h"
typedef const void hc_const_void;
*/
import "C"

// abiVersion is HC_ABI_VERSION of hiercoll.h, the header this library implements.
const abiVersion = C.HC_ABI_VERSION

// The overlap flags as hiercoll.h defines them: a difference either way
// makes one of these constants negative, which a uint cannot hold.
const (
	_ = uint(overlapWithGEMM-C.HC_OVERLAP_WITH_GEMM) + uint(C.HC_OVERLAP_WITH_GEMM-overlapWithGEMM)
	_ = uint(splitFirstBlock-C.HC_SPLIT_FIRST_BLOCK) + uint(C.HC_SPLIT_FIRST_BLOCK-splitFirstBlock)
	_ = uint(layoutKN-C.HC_B_KN) + uint(C.HC_B_KN-layoutKN)
	_ = uint(layoutNK-C.HC_B_NK) + uint(C.HC_B_NK-layoutNK)
	_ = uint(graphs-C.HC_GRAPHS) + uint(C.HC_GRAPHS-graphs)
	_ = uint(pullEngine-C.HC_PULL) + uint(C.HC_PULL-pullEngine)
	_ = uint(scaleTensor-C.HC_SCALE_TENSOR) + uint(C.HC_SCALE_TENSOR-scaleTensor)
	_ = uint(scaleRow-C.HC_SCALE_ROW) + uint(C.HC_SCALE_ROW-scaleRow)
	_ = uint(scaleBlock-C.HC_SCALE_BLOCK) + uint(C.HC_SCALE_BLOCK-scaleBlock)
)
