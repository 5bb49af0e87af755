package kernels

// SetGemmTileHook makes the GEMM's Go twin call hook(rt, ct) before it
// computes tile (rt, ct) (nil: none), for tests that delay a tile.
func SetGemmTileHook(hook func(rt, ct int)) { gemmTileHook = hook }
