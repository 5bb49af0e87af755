package gemm_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// hopper opens GPU 0 for the test (closed at its end), or skips the test
// where there is no CUDA device or it is not a Hopper (the GEMM's sm_90a).
func hopper(t *testing.T, o cuda.Options) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0, o)
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	if d.Arch() != "sm_90" {
		t.Skipf("the GEMM is for sm_90 (Hopper); this device is %s", d.Arch())
	}
	return d
}

// On a Hopper GPU, every variant of the GEMM compiles (NVRTC, sm_90a),
// loads with its dynamic shared memory, and keeps its accumulators in
// registers: no local memory (spills would mean the register budget of
// setmaxnreg did not hold).
func TestGemmCompilesAndLoadsOnGPU(t *testing.T) {
	d := hopper(t, cuda.Options{KernelCacheDir: t.TempDir()})
	for _, k := range gemm.Kernels() {
		res, err := d.Resources(k)
		require.NoError(t, err, k.Name)
		t.Logf("%s: %d registers, %d bytes of local memory, %d bytes of dynamic shared memory", k.Name, res.Registers, res.LocalBytes, k.Shared)
		require.Zero(t, res.LocalBytes, "%s spills to local memory", k.Name)
	}
}

// On a Hopper GPU, the fp8 kernels with each scaling (per-tensor, row-wise,
// block-wise; bf16 and fp16 out; C's rows 16-byte aligned and not, so both
// stores; whole tiles and a stream-K last wave) against the fp64 product of
// the dequantised operands at every tail of scaledCases. The bound is
// looser than the twin's: Hopper's tensor cores add fp8 products with
// fewer bits than fp32 (2^-9 of the magnitudes' sum per 128-deep k tile
// here, far below what a misplaced scale costs: of the order of the value).
// First every kernel of the module loads without spills (as the test
// above, but from the default cache, $HIERCOLL_CACHE_DIR, so that later
// runs of the library find them compiled).
func TestGemmScalingsOnGPU(t *testing.T) {
	d := hopper(t, cuda.Options{})
	// Every instantiation compiles and loads from this cache (the Python
	// and CLI runs after this test find them there), accumulators in
	// registers.
	for _, k := range gemm.Kernels() {
		res, err := d.Resources(k)
		require.NoError(t, err, k.Name)
		t.Logf("%s: %d registers, %d bytes of local memory", k.Name, res.Registers, res.LocalBytes)
		require.Zero(t, res.LocalBytes, "%s spills to local memory", k.Name)
	}
	gpuTolerance := func(c scaledCase) func(exact, abs float64) float64 {
		kb := float64((c.k + gemm.ScaleBlock - 1) / gemm.ScaleBlock)
		return func(exact, abs float64) float64 {
			return c.out.UnitRoundoff()*math.Abs(exact) + kb*0x1p-9*abs + tinyOf(c.out)
		}
	}
	for _, scaling := range []gemm.Scaling{gemm.PerTensor, gemm.RowWise, gemm.BlockWise} {
		cases := scaledCases(scaling)
		cases = append(cases,
			scaledCase{m: 136, n: 264, k: 640, out: dtype.BF16, scaling: scaling, lo: -20, hi: 20, grid: 3},
			scaledCase{m: 300, n: 520, k: 1024, out: dtype.BF16, scaling: scaling, lo: -3, hi: 3, grid: 5},
			scaledCase{m: 300, n: 520, k: 1024, out: dtype.F16, scaling: scaling, lo: -8, hi: -2})
		for _, c := range cases {
			t.Run(c.String(), func(t *testing.T) {
				if c.grid > 0 {
					defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
				}
				r := runScaled(t, d, c)
				r.requireNear(t, gpuTolerance(c))
			})
		}
	}
}

// On a Hopper GPU, the sum in the epilogue (Params.Sum) against the same
// product without it and the blocks summed in turn (SumInTurn; with two
// blocks the reduce kernel's sum), bit for bit, with the blocks landing on
// a second stream while the kernel waits for them (and before it starts),
// for every case of the twin's test and three larger ones (several waves
// of tiles, a stream-K last wave, four blocks) and one with the storer's
// queue full.
func TestGemmSumOnGPU(t *testing.T) {
	d := hopper(t, cuda.Options{})
	cases := append(sumCases(),
		sumCase{in: dtype.BF16, out: dtype.BF16, layout: gemm.BNK, m: 4096, n: 2048, k: 512, r0: 1024, rows: 1024, blocks: 2, self: 1, segRows: 256, base: 11, landAfterLaunch: true},
		sumCase{in: dtype.E4M3, out: dtype.BF16, layout: gemm.BNK, m: 2048, n: 1280, k: 1024, r0: 1536, rows: 512, blocks: 2, self: 0, segRows: 64, grid: 100, scaling: gemm.RowWise, base: 5, landAfterLaunch: true},
		// One CTA, 36 own tiles, the blocks landing 50 ms after the launch
		// (the product takes a few): the storer's queue fills, and it
		// waits for the oldest tile's rows with the consumers held.
		sumCase{in: dtype.BF16, out: dtype.BF16, layout: gemm.BNK, m: 3072, n: 768, k: 4096, r0: 1536, rows: 1536, blocks: 2, self: 1, segRows: 512, grid: 1, base: 4, landAfterLaunch: true, landLate: 50 * time.Millisecond},
		sumCase{in: dtype.BF16, out: dtype.BF16, layout: gemm.BNK, m: 4096, n: 2048, k: 512, r0: 2048, rows: 1024, blocks: 4, self: 2, segRows: 256, base: 2, landAfterLaunch: true})
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			if c.grid > 0 {
				defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
			}
			runSum(t, d, c).check(t)
		})
	}
}
