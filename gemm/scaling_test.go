package gemm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// scaledCase is one fp8 product with scales: A [m, k] and B [n, k] e4m3,
// C of out; scales 2^e·(1 + f), e uniform in [lo, hi], f in [0, 1).
type scaledCase struct {
	m, n, k int
	out     dtype.DType
	scaling gemm.Scaling
	lo, hi  int
	grid    int // stream-K with a workspace for this many CTAs (0: whole tiles)
}

func (c scaledCase) String() string {
	return fmt.Sprintf("%v/%v/%dx%dx%d/2^%d..2^%d/grid%d", c.scaling, c.out, c.m, c.n, c.k, c.lo, c.hi, c.grid)
}

// scaledRun is a scaledCase on a device: its operands and scales on the
// host, and C as the GEMM left it.
type scaledRun struct {
	scaledCase
	a, b, sa, sb []byte
	got          []byte
}

func randomScales(rng *rand.Rand, count, lo, hi int) []byte {
	b := make([]byte, 4*count)
	for i := 0; i < count; i++ {
		v := float32(math.Ldexp(1+rng.Float64(), lo+rng.IntN(hi-lo+1)))
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// simDev is a simulated device for one test.
func simDev(t *testing.T) device.Device {
	dev, _, _ := kerneltest.SimDevice(t)
	return dev
}

func f32At(b []byte, i int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// runScaled runs c on dev: C poisoned first, the kernel (or twin) launched
// with the case's scales, C read back.
func runScaled(t *testing.T, dev device.Device, c scaledCase) scaledRun {
	t.Helper()
	s, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	rng := kerneltest.NewRNG(t)
	na, nb := gemm.ScaleCounts(c.scaling, c.m, c.n, c.k)
	r := scaledRun{scaledCase: c, a: check.Random(rng, dtype.E4M3, c.m*c.k), b: check.Random(rng, dtype.E4M3, c.n*c.k),
		sa: randomScales(rng, na, c.lo, c.hi), sb: randomScales(rng, nb, c.lo, c.hi)}
	alloc := func(data []byte) device.Ptr {
		p, err := dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		require.NoError(t, dev.CopyToDevice(p, data))
		return p
	}
	g := gemm.Params{GemmSpec: device.GemmSpec{M: c.m, N: c.n, K: c.k, DType: dtype.E4M3, BT: true,
		A: alloc(r.a), B: alloc(r.b), C: alloc(check.Poison(c.out, c.m*c.n))}, Out: c.out,
		Scaling: c.scaling, ScaleA: alloc(r.sa), ScaleB: alloc(r.sb), Grid: c.grid}
	if c.grid > 0 {
		g.Workspace = alloc(make([]byte, gemm.WorkspaceBytes(c.grid)))
	}
	require.NoError(t, gemm.Launch(dev, s, g))
	require.NoError(t, s.Synchronize(context.Background()))
	r.got = make([]byte, c.m*c.n*c.out.Size())
	require.NoError(t, dev.CopyToHost(r.got, g.C))
	return r
}

// scaleOf returns the scales of element (i, kk) of A and (j, kk) of B.
func (r scaledRun) scaleOf(i, j, kk int) (float64, float64) {
	switch r.scaling {
	case gemm.RowWise:
		return f32At(r.sa, i), f32At(r.sb, j)
	case gemm.BlockWise:
		kb := (r.k + gemm.ScaleBlock - 1) / gemm.ScaleBlock
		return f32At(r.sa, kk/gemm.ScaleBlock*r.m+i), f32At(r.sb, j/gemm.ScaleBlock*kb+kk/gemm.ScaleBlock)
	}
	return f32At(r.sa, 0), f32At(r.sb, 0)
}

// tinyOf is the smallest positive value of dt (an absolute slack for
// results that round to subnormals).
func tinyOf(dt dtype.DType) float64 {
	if dt == dtype.F16 {
		return 0x1p-24
	}
	return 0x1p-133
}

// requireNear compares every element of C with the fp64 product of the
// dequantised operands, Σ_k A[i, k]·sa·B[j, k]·sb; tol gives the bound
// from the exact value and the sum of the products' magnitudes.
func (r scaledRun) requireNear(t *testing.T, tol func(exact, abs float64) float64) {
	t.Helper()
	for i := 0; i < r.m; i++ {
		for j := 0; j < r.n; j++ {
			exact, abs := 0.0, 0.0
			for kk := 0; kk < r.k; kk++ {
				sa, sb := r.scaleOf(i, j, kk)
				p := dtype.E4M3.Get(r.a, i*r.k+kk) * sa * dtype.E4M3.Get(r.b, j*r.k+kk) * sb
				exact += p
				abs += math.Abs(p)
			}
			v := r.out.Get(r.got, i*r.n+j)
			require.False(t, math.IsNaN(v), "C[%d, %d] was never written", i, j)
			require.LessOrEqual(t, math.Abs(v-exact), tol(exact, abs), "C[%d, %d] = %g, want %g (sum of magnitudes %g)", i, j, v, exact, abs)
		}
	}
}

// twinTolerance bounds the twin's error: fp32 sums of at most K products
// (exact in fp32), block-wise also the scales' product, the promotion's
// fused multiply-add per k tile, and the sum of the tiles, then one
// rounding to C's dtype.
func twinTolerance(c scaledCase) func(exact, abs float64) float64 {
	kb := float64((c.k + gemm.ScaleBlock - 1) / gemm.ScaleBlock)
	return func(exact, abs float64) float64 {
		return (c.out.UnitRoundoff()+(float64(c.k)+3*kb+4)/(1<<24))*abs + tinyOf(c.out)
	}
}

// scaledCases are the shapes every scaling is checked at: M and N not
// multiples of the tile (128 × 256) and of B's 128-row blocks, one row, K
// below one k tile, a multiple of 128 and not; bf16 with scales over 2^±20
// and 2^±3, fp16 within its range.
func scaledCases(scaling gemm.Scaling) []scaledCase {
	var cs []scaledCase
	for _, sh := range []struct{ m, n, k int }{{1, 8, 16}, {130, 264, 144}, {257, 16, 256}, {64, 520, 400}, {129, 300, 128}} {
		cs = append(cs,
			scaledCase{m: sh.m, n: sh.n, k: sh.k, out: dtype.BF16, scaling: scaling, lo: -20, hi: 20},
			scaledCase{m: sh.m, n: sh.n, k: sh.k, out: dtype.BF16, scaling: scaling, lo: -3, hi: 3},
			scaledCase{m: sh.m, n: sh.n, k: sh.k, out: dtype.F16, scaling: scaling, lo: -6, hi: 2})
	}
	return cs
}

// Row-wise and block-wise scales, on the twin: every element of every
// shape within the fp32 bound of the fp64 product of the dequantised
// operands, tails included, and stream-K pieces (row-wise scaled after the
// pieces are summed, block-wise pieces each promoted per k tile).
func TestGemmScalingTwinMatchesReference(t *testing.T) {
	for _, scaling := range []gemm.Scaling{gemm.RowWise, gemm.BlockWise} {
		for _, c := range scaledCases(scaling) {
			t.Run(c.String(), func(t *testing.T) {
				r := runScaled(t, simDev(t), c)
				r.requireNear(t, twinTolerance(c))
			})
		}
		c := scaledCase{m: 136, n: 264, k: 640, out: dtype.BF16, scaling: scaling, lo: -20, hi: 20, grid: 3} // 4 tiles, 5 k tiles
		t.Run(c.String(), func(t *testing.T) {
			defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
			r := runScaled(t, simDev(t), c)
			r.requireNear(t, twinTolerance(c))
		})
	}
}

// With every scale of A one value and every scale of B another, row-wise
// scaling gives per-tensor's bits (both multiply the fp32 sum by the
// scales' product), and so does block-wise where K is one k tile (its
// one promotion rounds sum·scale once).
func TestGemmScalingsAgreeWithPerTensor(t *testing.T) {
	const m, n = 130, 264
	for _, c := range []struct {
		scaling gemm.Scaling
		k       int
	}{{gemm.RowWise, 400}, {gemm.BlockWise, 128}, {gemm.BlockWise, 80}} {
		t.Run(fmt.Sprintf("%v/k%d", c.scaling, c.k), func(t *testing.T) {
			dev := simDev(t)
			s, err := dev.NewStream(device.Normal)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			rng := kerneltest.NewRNG(t)
			alloc := func(data []byte) device.Ptr {
				p, err := dev.Alloc(int64(len(data)))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
				require.NoError(t, dev.CopyToDevice(p, data))
				return p
			}
			fill := func(count int, v float32) []byte {
				b := make([]byte, 4*count)
				for i := 0; i < count; i++ {
					binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
				}
				return b
			}
			const sa, sb = float32(0.7353), float32(3.1e-3)
			na, nb := gemm.ScaleCounts(c.scaling, m, n, c.k)
			g := gemm.Params{GemmSpec: device.GemmSpec{M: m, N: n, K: c.k, DType: dtype.E4M3, BT: true,
				A: alloc(check.Random(rng, dtype.E4M3, m*c.k)), B: alloc(check.Random(rng, dtype.E4M3, n*c.k)),
				C: alloc(check.Poison(dtype.BF16, m*n))}, Out: dtype.BF16, ScaleA: alloc(fill(1, sa)), ScaleB: alloc(fill(1, sb))}
			results := [2][]byte{}
			for i, x := range []struct {
				scaling gemm.Scaling
				a, b    device.Ptr
			}{{gemm.PerTensor, g.ScaleA, g.ScaleB}, {c.scaling, alloc(fill(na, sa)), alloc(fill(nb, sb))}} {
				g.Scaling, g.ScaleA, g.ScaleB = x.scaling, x.a, x.b
				require.NoError(t, gemm.Launch(dev, s, g))
				require.NoError(t, s.Synchronize(context.Background()))
				results[i] = make([]byte, 2*m*n)
				require.NoError(t, dev.CopyToHost(results[i], g.C))
				require.NoError(t, dev.CopyToDevice(g.C, check.Poison(dtype.BF16, m*n)))
			}
			kerneltest.RequireSameBits(t, dtype.BF16, results[0], results[1], "per-tensor", c.scaling.String())
		})
	}
}

// Every scaling has a kernel for each output dtype and store, under the
// name gemm.cu instantiates (the GPU check loads them all).
func TestGemmScalingKernelNames(t *testing.T) {
	names := map[string]bool{}
	for _, k := range gemm.Kernels() {
		names[k.Name] = true
	}
	for _, out := range []string{"bf16", "fp16"} {
		for _, sc := range []string{"", "_row", "_block"} {
			for _, odd := range []string{"", "_odd"} {
				name := "hc_gemm_e4m3_" + out + "_nk" + sc + odd
				require.True(t, names[name], "no kernel %s", name)
			}
		}
	}
	require.Len(t, names, 20)
}

// Row- and block-wise scaling is for e4m3 inputs, with both scale arrays,
// 4-byte aligned and, at launch, inside their allocations.
func TestGemmScalingCheck(t *testing.T) {
	ok := gemm.Params{GemmSpec: device.GemmSpec{M: 8, N: 16, K: 16, A: 0x1000, B: 0x2000, C: 0x3000, DType: dtype.E4M3, BT: true},
		Out: dtype.BF16, Scaling: gemm.BlockWise, ScaleA: 0x4000, ScaleB: 0x5000}
	require.NoError(t, ok.Check())
	for name, g := range map[string]gemm.Params{
		"bf16 inputs": func() gemm.Params {
			g := ok
			g.DType, g.Out, g.ScaleA, g.ScaleB = dtype.BF16, dtype.Invalid, 0, 0
			return g
		}(),
		"no scales of A":  func() gemm.Params { g := ok; g.ScaleA = 0; return g }(),
		"no scales of B":  func() gemm.Params { g := ok; g.Scaling, g.ScaleB = gemm.RowWise, 0; return g }(),
		"unknown scaling": func() gemm.Params { g := ok; g.Scaling = 7; return g }(),
		"misaligned":      func() gemm.Params { g := ok; g.ScaleB = 0x5002; return g }(),
	} {
		require.ErrorIs(t, g.Check(), device.ErrInvalidArgument, name)
	}
	for _, s := range []string{"tensor", "row", "block"} {
		sc, err := gemm.ParseScaling(s)
		require.NoError(t, err)
		require.Equal(t, s, sc.String())
	}
	_, err := gemm.ParseScaling("column")
	require.ErrorIs(t, err, device.ErrInvalidArgument)

	// Block-wise 130 × 264 × 208: A's scales [2, 130], B's [3, 2]; one
	// fp32 short of either is refused before anything runs.
	r := newGemmRigOut(t, dtype.E4M3, dtype.BF16, gemm.BNK, 130, 264, 208)
	na, nb := gemm.ScaleCounts(gemm.BlockWise, 130, 264, 208)
	require.Equal(t, []int{260, 6}, []int{na, nb})
	for _, short := range [][2]int{{na - 1, nb}, {na, nb - 1}} {
		a, err := r.dev.Alloc(int64(4 * short[0]))
		require.NoError(t, err)
		b, err := r.dev.Alloc(int64(4 * short[1]))
		require.NoError(t, err)
		g := r.g
		g.Scaling, g.ScaleA, g.ScaleB = gemm.BlockWise, a, b
		require.ErrorIs(t, gemm.Launch(r.dev, r.s, g), device.ErrInvalidArgument)
		require.NoError(t, r.dev.Free(a))
		require.NoError(t, r.dev.Free(b))
	}
}
