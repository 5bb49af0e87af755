package gemm

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
