package gemm

import "github.com/seed12530e24/hiercoll/device"

// SetTileHook makes the GEMM's Go twin call hook(rt, ct) before it
// computes tile (rt, ct) (nil: none), for tests that delay a tile.
func SetTileHook(hook func(rt, ct int)) { gemmTileHook = hook }

// SetStreamKMin sets the fewest k tiles per CTA for a stream-K last
// wave and returns the previous value.
func SetStreamKMin(n int64) int64 {
	old := gemmStreamKMin
	gemmStreamKMin = n
	return old
}

// KernelTable is a table Launch and Prepare take their kernels from.
type KernelTable map[gemmKey]*device.Kernel

// TableOf is the table of src's kernels, src a variant of gemm.cu (the
// same kernel names), compiled as a module of its own (an A/B test's),
// and that module (for a kernel the variant adds).
func TableOf(src string) (KernelTable, *device.Module) {
	m := &device.Module{Name: "hiercoll_gemm_variant", Source: src, Arch: module.Arch}
	return kernelTable(m), m
}

// UseTable makes Launch and Prepare take their kernels from t and returns
// the table they took them from before.
func UseTable(t KernelTable) KernelTable {
	old := gemmKernels
	gemmKernels = t
	return old
}
