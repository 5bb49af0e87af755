package gemm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// gemmRig is a simulated device with A, B and C of one product, filled
// with random values (C poisoned); scale is the product of the scales set
// by setScales (1 without).
type gemmRig struct {
	dev   *sim.Device
	s     device.Stream
	g     gemm.Params
	a, b  []byte
	ldb   int
	scale float64
}

func newGemmRig(t *testing.T, dt dtype.DType, layout gemm.BLayout, m, n, k int) *gemmRig {
	t.Helper()
	return newGemmRigOut(t, dt, dt, layout, m, n, k)
}

// newGemmRigOut is newGemmRig with C of dtype out.
func newGemmRigOut(t *testing.T, dt, out dtype.DType, layout gemm.BLayout, m, n, k int) *gemmRig {
	t.Helper()
	dev := sim.New(sim.NewHost("gemm"), 0, sim.Options{WaitTimeout: time.Minute})
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	s, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	rng := kerneltest.NewRNG(t)
	alloc := func(data []byte) device.Ptr {
		p, err := dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		require.NoError(t, dev.CopyToDevice(p, data))
		return p
	}
	r := &gemmRig{dev: dev, s: s, a: check.Random(rng, dt, m*k), b: check.Random(rng, dt, k*n), scale: 1}
	r.g = gemm.Params{GemmSpec: device.GemmSpec{M: m, N: n, K: k, DType: dt, BT: layout == gemm.BNK,
		A: alloc(r.a), B: alloc(r.b), C: alloc(check.Poison(out, m*n))}, Out: out}
	r.ldb = n
	if layout == gemm.BNK {
		r.ldb = k
	}
	return r
}

// b is element (kk, j) of the logical [K, N] B.
func (r *gemmRig) bAt(kk, j int) float64 {
	if r.g.BT {
		return r.g.DType.Get(r.b, j*r.ldb+kk)
	}
	return r.g.DType.Get(r.b, kk*r.ldb+j)
}

// setScales gives the product per-tensor scales a and b (fp32 on the
// device).
func (r *gemmRig) setScales(t *testing.T, a, b float32) {
	t.Helper()
	for _, x := range []struct {
		p *device.Ptr
		v float32
	}{{&r.g.ScaleA, a}, {&r.g.ScaleB, b}} {
		p, err := r.dev.Alloc(4)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.dev.Free(p)) })
		require.NoError(t, r.dev.CopyToDevice(p, binary.LittleEndian.AppendUint32(nil, math.Float32bits(x.v))))
		*x.p = p
	}
	r.scale = float64(a) * float64(b)
}

// check compares C with the fp64 product: each element within the bound
// of fp32 accumulation of K products (exact in fp32 for every input dtype
// here), the scales' product and multiplication in fp32, and one rounding
// to C's dtype.
func (r *gemmRig) check(t *testing.T) {
	t.Helper()
	g, dt, out := r.g, r.g.DType, r.g.Out
	if out == dtype.Invalid {
		out = dt
	}
	got := make([]byte, g.M*g.N*out.Size())
	require.NoError(t, r.dev.CopyToHost(got, g.C))
	for i := 0; i < g.M; i++ {
		for j := 0; j < g.N; j++ {
			exact, abs := 0.0, 0.0
			for kk := 0; kk < g.K; kk++ {
				p := dt.Get(r.a, i*g.K+kk) * r.bAt(kk, j)
				exact += p
				abs += math.Abs(p)
			}
			exact, abs = exact*r.scale, abs*math.Abs(r.scale)
			v := out.Get(got, i*g.N+j)
			tol := (out.UnitRoundoff()+float64(g.K+2)/(1<<24))*abs + 1.0/(1<<24)
			require.False(t, math.IsNaN(v), "C[%d, %d] was never written", i, j)
			require.LessOrEqual(t, math.Abs(v-exact), tol, "C[%d, %d] = %g, want %g", i, j, v, exact)
		}
	}
}

// The twin computes every element of every shape, tails included (M, N, K
// not multiples of the tile, K below one tile, one row), for both layouts
// of B and both dtypes.
func TestGemmTwinMatchesReference(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, layout := range []gemm.BLayout{gemm.BKN, gemm.BNK} {
			for _, sh := range []struct{ m, n, k int }{{1, 8, 8}, {130, 264, 72}, {257, 16, 8}, {64, 520, 136}} {
				t.Run(fmt.Sprintf("%v/%v/%dx%dx%d", dt, layout, sh.m, sh.n, sh.k), func(t *testing.T) {
					r := newGemmRig(t, dt, layout, sh.m, sh.n, sh.k)
					require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
					require.NoError(t, r.s.Synchronize(context.Background()))
					r.check(t)
				})
			}
		}
	}
}

// fp8 e4m3 inputs with per-tensor scales, to bf16 and fp16: every element
// of every shape within the bound, tails included (K not a multiple of
// the 128-deep k tile, K below one tile, one row), with scales and without
// (1); stream-K pieces too.
func TestGemmE4M3TwinMatchesReference(t *testing.T) {
	for _, out := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, sh := range []struct{ m, n, k int }{{1, 8, 16}, {130, 264, 144}, {257, 16, 16}, {64, 520, 400}} {
			t.Run(fmt.Sprintf("%v/%dx%dx%d", out, sh.m, sh.n, sh.k), func(t *testing.T) {
				r := newGemmRigOut(t, dtype.E4M3, out, gemm.BNK, sh.m, sh.n, sh.k)
				if sh.m != 257 {
					r.setScales(t, 0.37, 1.9)
				}
				require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
				require.NoError(t, r.s.Synchronize(context.Background()))
				r.check(t)
			})
		}
	}
	t.Run("stream-K", func(t *testing.T) {
		defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
		r := newGemmRigOut(t, dtype.E4M3, dtype.BF16, gemm.BNK, 130, 264, 1008) // 4 tiles (partial in both), 1 left over
		r.setScales(t, 3, 0.01)
		r.g.Grid = 3
		ws, err := r.dev.Alloc(gemm.WorkspaceBytes(3))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.dev.Free(ws)) })
		require.NoError(t, r.dev.CopyToDevice(ws, make([]byte, gemm.WorkspaceBytes(3))))
		r.g.Workspace = ws
		require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
		require.NoError(t, r.s.Synchronize(context.Background()))
		r.check(t)
	})
}

// With a workspace, the last wave's tiles are summed in the kernel's
// stream-K pieces (here even for shallow shares): still within the bound
// everywhere, the flags left down, and a workspace too small for the grid
// refused before anything runs. Shares shallower than the threshold take
// whole tiles; a workspace given is still checked whole (its size is the
// grid's, whether or not this launch goes stream-K).
func TestGemmStreamKTwin(t *testing.T) {
	t.Run("shallow", func(t *testing.T) {
		r := newGemmRig(t, dtype.BF16, gemm.BNK, 130, 264, 640)
		r.g.Grid = 3 // 4 tiles: one left over, 10 k tiles: 3.3 per CTA
		small, err := r.dev.Alloc(64)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.dev.Free(small)) })
		r.g.Workspace = small
		require.ErrorIs(t, gemm.Launch(r.dev, r.s, r.g), device.ErrInvalidArgument)
		ws, err := r.dev.Alloc(gemm.WorkspaceBytes(r.g.Grid))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.dev.Free(ws)) })
		require.NoError(t, r.dev.CopyToDevice(ws, make([]byte, gemm.WorkspaceBytes(r.g.Grid))))
		r.g.Workspace = ws
		require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
		require.NoError(t, r.s.Synchronize(context.Background()))
		r.check(t)
	})
	defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
	for _, sh := range []struct{ m, n, k, grid int }{{130, 520, 640, 4}, {300, 264, 600, 5}, {130, 264, 200, 3}, {257, 296, 520, 4}} {
		for _, layout := range []gemm.BLayout{gemm.BKN, gemm.BNK} {
			t.Run(fmt.Sprintf("%v/%dx%dx%d/grid%d", layout, sh.m, sh.n, sh.k, sh.grid), func(t *testing.T) {
				r := newGemmRig(t, dtype.BF16, layout, sh.m, sh.n, sh.k)
				r.g.Grid = sh.grid
				size := gemm.WorkspaceBytes(sh.grid)
				small, err := r.dev.Alloc(size / 2)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, r.dev.Free(small)) })
				r.g.Workspace = small
				require.ErrorIs(t, gemm.Launch(r.dev, r.s, r.g), device.ErrInvalidArgument)

				ws, err := r.dev.Alloc(size)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, r.dev.Free(ws)) })
				require.NoError(t, r.dev.CopyToDevice(ws, make([]byte, size)))
				r.g.Workspace = ws
				require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
				require.NoError(t, r.s.Synchronize(context.Background()))
				r.check(t)
				flags := make([]byte, 4*sh.grid)
				require.NoError(t, r.dev.CopyToHost(flags, ws))
				require.Equal(t, make([]byte, 4*sh.grid), flags)
			})
		}
	}
}

// Segments are raised once every tile meeting them is stored, with the
// call's value, their counters left at zero for the next launch; a
// segment's signal is not raised before its rows are in C.
func TestGemmSignalsSegments(t *testing.T) {
	const dt = dtype.BF16
	m, n, k := 300, 520, 64 // 3 row tiles, 3 column tiles
	r := newGemmRig(t, dt, gemm.BNK, m, n, k)
	// Segments in a consumer's order: rows 200..300 first, then 0..150
	// (two row tiles), then 150..200 (inside row tile 1).
	segs := []gemm.Segment{{R0: 200, R1: 300}, {R0: 0, R1: 150}, {R0: 150, R1: 200}}
	words, err := r.dev.Alloc(int64(4 * len(segs)))
	require.NoError(t, err)
	defer r.dev.Free(words)
	require.NoError(t, r.dev.CopyToDevice(words, make([]byte, 4*len(segs))))
	for i := range segs {
		segs[i].Signal = words.Add(int64(4 * i))
	}
	order, records := gemm.Tables(m, n, segs)
	require.Equal(t, []uint32{1, 2, 0}, u32s(order), "row tiles of rows 200..300 (1, 2), then 0..150 (0; 1 taken)")
	need := func(i int) uint32 { return binary.LittleEndian.Uint32(records[24*i+8:]) }
	require.Equal(t, []uint32{2 * 3, 2 * 3, 1 * 3}, []uint32{need(0), need(1), need(2)})
	// Then each row tile's segments: offsets, indices. Row tile 0 (rows
	// 0..128) meets segment 1; row tile 1 (128..256) all three; row tile 2
	// (256..300) segment 0.
	require.Equal(t, []uint32{0, 1, 4, 5, 1, 0, 1, 2, 0}, u32s(records[24*len(segs):]))
	tables := func(data []byte) device.Ptr {
		p, err := r.dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		require.NoError(t, r.dev.CopyToDevice(p, data))
		t.Cleanup(func() { require.NoError(t, r.dev.Free(p)) })
		return p
	}
	r.g.Order, r.g.Segments, r.g.Counters, r.g.NSegs = tables(order), tables(records), tables(make([]byte, 12)), len(segs)
	for call := uint32(7); call < 10; call++ {
		r.g.Value = call
		require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
		// The scatter's view: wait for each segment's word, then its rows
		// must be complete.
		for i := range segs {
			require.NoError(t, r.dev.WaitValue32(r.s, device.Word{Addr: segs[i].Signal, Label: "segment"}, device.GEQ, call))
		}
		require.NoError(t, r.s.Synchronize(context.Background()))
		r.check(t)
		got := make([]byte, 12)
		require.NoError(t, r.dev.CopyToHost(got, r.g.Counters))
		require.Equal(t, []uint32{0, 0, 0}, u32s(got), "counters back at zero")
		require.NoError(t, r.dev.CopyToHost(got, words))
		require.Equal(t, []uint32{call, call, call}, u32s(got))
		require.NoError(t, r.dev.CopyToDevice(r.g.C, check.Poison(dt, m*n)))
	}
}

// No copy of a segment starts before its tiles are stored: a copier on
// another stream copies each segment out of C as soon as its signal is
// raised, while the GEMM runs with one tile of a segment held back; C and
// the copies' destination start poisoned, so a segment signalled early
// would leave poison in the copy. bf16 inputs and fp8 ones.
func TestGemmSignalGatesCopies(t *testing.T) {
	for _, in := range []dtype.DType{dtype.BF16, dtype.E4M3} {
		t.Run(in.String(), func(t *testing.T) { testGemmSignalGatesCopies(t, in) })
	}
}

// testGemmSignalGatesCopies is TestGemmSignalGatesCopies with inputs of in
// (e4m3: with scales), C in bf16.
func testGemmSignalGatesCopies(t *testing.T, in dtype.DType) {
	const dt = dtype.BF16
	m, n, k := 300, 520, 64
	r := newGemmRigOut(t, in, dt, gemm.BNK, m, n, k)
	if in == dtype.E4M3 {
		r.setScales(t, 0.75, 3)
	}
	segs := []gemm.Segment{{R0: 200, R1: 300}, {R0: 0, R1: 150}, {R0: 150, R1: 200}}
	alloc := func(data []byte) device.Ptr {
		p, err := r.dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		require.NoError(t, r.dev.CopyToDevice(p, data))
		t.Cleanup(func() { require.NoError(t, r.dev.Free(p)) })
		return p
	}
	words := alloc(make([]byte, 4*len(segs)))
	for i := range segs {
		segs[i].Signal = words.Add(int64(4 * i))
	}
	order, records := gemm.Tables(m, n, segs)
	r.g.Order, r.g.Segments, r.g.Counters, r.g.NSegs, r.g.Value = alloc(order), alloc(records), alloc(make([]byte, 12)), len(segs), 1
	dst := alloc(check.Poison(dt, m*n))
	copier, err := r.dev.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, copier.Close()) }()
	rowBytes := int64(n * dt.Size())
	for i, sg := range segs {
		require.NoError(t, r.dev.WaitValue32(copier, device.Word{Addr: segs[i].Signal, Label: "segment"}, device.GEQ, 1))
		require.NoError(t, r.dev.Copy(copier, dst.Add(int64(sg.R0)*rowBytes), r.g.C.Add(int64(sg.R0)*rowBytes), int64(sg.R1-sg.R0)*rowBytes))
	}
	// Row tile 0, column tile 2 (rows 0..128) belongs to segment 1.
	gemm.SetTileHook(func(rt, ct int) {
		if rt == 0 && ct == 2 {
			time.Sleep(50 * time.Millisecond)
		}
	})
	defer gemm.SetTileHook(nil)
	require.NoError(t, gemm.Launch(r.dev, r.s, r.g))
	require.NoError(t, copier.Synchronize(context.Background()))
	require.NoError(t, r.s.Synchronize(context.Background()))
	r.g.C = dst // check the copies
	r.check(t)
}

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// What TMA cannot describe is refused as not supported (a caller falls
// back to another GEMM): rows not 16-byte aligned, fp32; bad arguments are
// invalid.
func TestGemmCheck(t *testing.T) {
	ok := gemm.Params{GemmSpec: device.GemmSpec{M: 8, N: 16, K: 16, A: 0x1000, B: 0x2000, C: 0x3000, DType: dtype.BF16}}
	require.NoError(t, ok.Check())
	for name, c := range map[string]struct {
		g    gemm.Params
		want error
	}{
		"K not a multiple of 8":     {func() gemm.Params { g := ok; g.K = 12; return g }(), device.ErrNotSupported},
		"N not a multiple of 8, kn": {func() gemm.Params { g := ok; g.N = 12; return g }(), device.ErrNotSupported},
		"fp32":                      {func() gemm.Params { g := ok; g.DType = dtype.F32; return g }(), device.ErrNotSupported},
		"unaligned A":               {func() gemm.Params { g := ok; g.A = 0x1008; return g }(), device.ErrNotSupported},
		"zero M":                    {func() gemm.Params { g := ok; g.M = 0; return g }(), device.ErrInvalidArgument},
		"nil C":                     {func() gemm.Params { g := ok; g.C = 0; return g }(), device.ErrInvalidArgument},
		"segments without tables":   {func() gemm.Params { g := ok; g.NSegs = 2; return g }(), device.ErrInvalidArgument},
	} {
		require.ErrorIs(t, c.g.Check(), c.want, name)
	}
	// [N, K] with N not a multiple of 8 is fine: only K strides B's rows.
	nk := ok
	nk.BT, nk.N = true, 12
	require.NoError(t, nk.Check())

	// e4m3: B [N, K] only, an output dtype of 16 bits, rows of 16 bytes.
	fp8 := ok
	fp8.DType, fp8.Out, fp8.BT, fp8.ScaleA, fp8.ScaleB = dtype.E4M3, dtype.BF16, true, 0x4000, 0x4004
	require.NoError(t, fp8.Check())
	for name, c := range map[string]struct {
		g    gemm.Params
		want error
	}{
		"e4m3, B [K, N]":         {func() gemm.Params { g := fp8; g.BT = false; return g }(), device.ErrNotSupported},
		"e4m3 without an output": {func() gemm.Params { g := fp8; g.Out = dtype.Invalid; return g }(), device.ErrInvalidArgument},
		"e4m3 to fp32":           {func() gemm.Params { g := fp8; g.Out = dtype.F32; return g }(), device.ErrNotSupported},
		"e4m3, K of 8 bytes":     {func() gemm.Params { g := fp8; g.K = 8; return g }(), device.ErrNotSupported},
		"bf16 with scales":       {func() gemm.Params { g := ok; g.ScaleA = 0x4000; return g }(), device.ErrInvalidArgument},
		"bf16 to fp16":           {func() gemm.Params { g := ok; g.Out = dtype.F16; return g }(), device.ErrNotSupported},
	} {
		require.ErrorIs(t, c.g.Check(), c.want, name)
	}
}

// CheckMemory checks each operand's extent against its allocation, with
// leading dimensions, before anything is enqueued; an extent too large to
// count (2^30 rows 2^40 elements apart) is refused, not wrapped around.
func TestGemmCheckMemory(t *testing.T) {
	r := newGemmRig(t, dtype.BF16, gemm.BKN, 40, 24, 32)
	require.NoError(t, r.g.CheckMemory(r.dev))
	for name, g := range map[string]gemm.Params{
		"A's rows further apart than its allocation holds": func() gemm.Params { g := r.g; g.LDA = 2 * g.K; return g }(),
		"B one element into its allocation":                func() gemm.Params { g := r.g; g.B = g.B.Add(2); return g }(),
		"C's rows wider than its allocation":               func() gemm.Params { g := r.g; g.LDC = g.N + 8; return g }(),
		"a scale that is not device memory":                func() gemm.Params { g := r.g; g.ScaleA = 0x1000; return g }(),
		"a workspace that is not device memory":            func() gemm.Params { g := r.g; g.Workspace = 0x1000; return g }(),
		"an extent past 2^50 bytes": func() gemm.Params {
			g := r.g
			g.M, g.LDA = 1<<30, 1<<40
			return g
		}(),
	} {
		require.ErrorIs(t, g.CheckMemory(r.dev), device.ErrInvalidArgument, name)
	}
}
