package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
)

// paths are hc_rs2d_matmul_reduce_scatter's two ways: overlapped (the own
// GEMM signalling the copy engine's context) and sequential (the GEMM, then
// the small products' context).
var paths = []struct {
	name    string
	overlap bool
}{{"overlapped", true}, {"sequential", false}}

// holdPath makes every hc_rs2d_matmul_reduce_scatter call take the
// overlapped path or the sequential one until the test ends, whatever the
// product's size.
func holdPath(t *testing.T, overlap bool) {
	old := sequentialFor
	sequentialFor = func(int, int, int, int) bool { return !overlap }
	t.Cleanup(func() { sequentialFor = old })
}

// forEachPath runs test as subtests name/overlapped and name/sequential,
// each holding its path.
func forEachPath(t *testing.T, name string, test func(t *testing.T)) {
	for _, p := range paths {
		t.Run(name+"/"+p.name, func(t *testing.T) {
			holdPath(t, p.overlap)
			test(t)
		})
	}
}

// hc_rs2d_matmul_reduce_scatter on simulated worlds, B in both layouts, by
// either path: small integer operands make every product and sum exact in
// bf16, so the output must equal the exact sum of the ranks' products bit
// for bit; c and out start poisoned. Three calls in a row, on fresh
// operands.
func TestMatmulReduceScatter(t *testing.T) {
	type shape struct{ nodes, gpus int }
	cases := []struct {
		shapes  []shape
		layouts []int
		rowsPer int
		flags   int
	}{
		{[]shape{{1, 2}, {2, 2}}, []int{layoutKN, layoutNK}, 20, overlapWithGEMM},
		// Blocks of whole row tiles on one node: the own GEMM sums the own
		// block in its epilogue, under growing and replayable signals.
		{[]shape{{1, 2}}, []int{layoutNK}, 128, overlapWithGEMM},
		{[]shape{{1, 2}}, []int{layoutKN}, 128, overlapWithGEMM | graphs},
	}
	for _, tc := range cases {
		for _, shape := range tc.shapes {
			for _, layout := range tc.layouts {
				testMatmulReduceScatter(t, shape.nodes, shape.gpus, layout, tc.rowsPer, tc.flags)
			}
		}
	}
}

func testMatmulReduceScatter(t *testing.T, nodes, gpus, layout, rowsPer, flags int) {
	forEachPath(t, fmt.Sprintf("%dx%d/layout%d/rows%d/flags%d", nodes, gpus, layout, rowsPer, flags), func(t *testing.T) {
		const dt, n, k = dtype.BF16, 24, 16
		hs := simRanks(t, nodes, gpus)
		world := len(hs)
		m := rowsPer * world
		value := func(call, rank, i int) float64 { return float64((call*7+rank*5+i*3)%5 - 2) }
		// a[r][i, kk] = value(call, r, i·k + kk); b[r][kk, j] = value(call, r+9, kk·n + j).
		exact := func(call, row, j int) float64 {
			sum := 0.0
			for r := 0; r < world; r++ {
				for kk := 0; kk < k; kk++ {
					sum += value(call, r, row*k+kk) * value(call, r+9, kk*n+j)
				}
			}
			return sum
		}
		eachRank(t, hs, func(rank int, h int64) error {
			ctx, err := createRS2D(h, int64(m), n, 1, flags, 0)
			if err != nil {
				return err
			}
			defer func() { require.NoError(t, destroyRS2D(ctx)) }()
			s, err := createStream(h)
			if err != nil {
				return err
			}
			alloc := func(elems int) uint64 {
				p, e := allocMem(h, int64(elems*dt.Size()))
				err = errors.Join(err, e)
				return p
			}
			a, b, c, out := alloc(m*k), alloc(k*n), alloc(m*n), alloc(rowsPer*n)
			if err != nil {
				return err
			}
			for call := 0; call < 3; call++ {
				ha, hb := make([]byte, m*k*2), make([]byte, k*n*2)
				for i := range m * k {
					dt.Put(ha, i, value(call, rank, i))
				}
				for kk := 0; kk < k; kk++ {
					for j := 0; j < n; j++ {
						at := kk*n + j
						if layout == layoutNK {
							at = j*k + kk
						}
						dt.Put(hb, at, value(call, rank+9, kk*n+j))
					}
				}
				for _, up := range []struct {
					p    uint64
					data []byte
				}{{a, ha}, {b, hb}, {c, check.Poison(dt, m*n)}, {out, check.Poison(dt, rowsPer*n)}} {
					if err := copyToDevice(h, up.p, up.data); err != nil {
						return err
					}
				}
				x := matmulArgs{a: a, b: b, c: c, out: out, m: int64(m), k: k, layout: layout}
				got, err := matmulOutput(h, ctx, x, s, rowsPer*n*2)
				if err != nil {
					return err
				}
				for i := 0; i < rowsPer; i++ {
					for j := 0; j < n; j++ {
						if v, want := dt.Get(got, i*n+j), exact(call, rank*rowsPer+i, j); v != want {
							return fmt.Errorf("call %d, rank %d: out[%d, %d] = %g, want %g", call, rank, i, j, v, want)
						}
					}
				}
			}
			return nil
		})
	})
}

// What the own GEMM cannot compute is refused as not supported before
// anything is enqueued (the caller falls back to its own producer), and a
// context without GEMM overlap or a bad layout as invalid; the context
// stays usable.
func TestMatmulReduceScatterRefusals(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]
	s, err := createStream(h)
	require.NoError(t, err)
	buf, err := allocMem(h, 1<<16)
	require.NoError(t, err)
	for _, tc := range []struct {
		name           string
		dt, overlap    int
		k, lda, layout int64
		want           error
	}{
		{"fp32", 3, overlapWithGEMM, 16, 0, layoutKN, device.ErrNotSupported},
		{"k not a multiple of 8", 1, overlapWithGEMM, 12, 0, layoutKN, device.ErrNotSupported},
		{"lda shorter than a row", 1, overlapWithGEMM, 16, 8, layoutKN, device.ErrInvalidArgument},
		{"no overlap", 1, 0, 16, 0, layoutKN, device.ErrInvalidArgument},
		{"bad layout", 1, overlapWithGEMM, 16, 0, 7, device.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, err := createRS2D(h, 16, 16, tc.dt, tc.overlap, 0)
			require.NoError(t, err)
			defer func() { require.NoError(t, destroyRS2D(ctx)) }()
			x := matmulArgs{a: buf, b: buf + 4096, c: buf + 8192, out: buf + 16384, m: 16, k: tc.k, lda: tc.lda, layout: int(tc.layout)}
			err = matmulReduceScatter(ctx, x, s)
			require.ErrorIs(t, err, tc.want)
			require.NoError(t, synchronizeStream(h, s, 10_000))
		})
	}
}

// hc_rs2d_scaled_matmul_reduce_scatter on simulated worlds: fp8 operands
// of -1, 0 and 1 and scales 0.5 and 4 make every product, scale and sum
// exact in bf16, so the output must equal the exact scaled sum of the
// ranks' products bit for bit; c and out start poisoned.
func TestScaledMatmulReduceScatter(t *testing.T) {
	for _, shape := range []struct{ nodes, gpus int }{{1, 2}, {2, 2}} {
		forEachPath(t, fmt.Sprintf("%dx%d", shape.nodes, shape.gpus), func(t *testing.T) {
			const out8, rowsPer, n, k = dtype.BF16, 20, 24, 32
			hs := simRanks(t, shape.nodes, shape.gpus)
			world := len(hs)
			m := rowsPer * world
			value := func(rank, i int) float64 { return float64((rank*5+i*3)%3 - 1) }
			// a[r][i, kk] = value(r, i·k + kk); b[r][j, kk] = value(r+9, j·k + kk).
			exact := func(row, j int) float64 {
				sum := 0.0
				for r := 0; r < world; r++ {
					for kk := 0; kk < k; kk++ {
						sum += value(r, row*k+kk) * value(r+9, j*k+kk)
					}
				}
				return 2 * sum
			}
			eachRank(t, hs, func(rank int, h int64) error {
				ctx, err := createRS2D(h, int64(m), n, 1, overlapWithGEMM, 0)
				if err != nil {
					return err
				}
				defer func() { require.NoError(t, destroyRS2D(ctx)) }()
				s, err := createStream(h)
				if err != nil {
					return err
				}
				ha, hb := make([]byte, m*k), make([]byte, n*k)
				for i := range ha {
					dtype.E4M3.Put(ha, i, value(rank, i))
				}
				for i := range hb {
					dtype.E4M3.Put(hb, i, value(rank+9, i))
				}
				scales := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5)), math.Float32bits(4))
				var ptrs [5]uint64
				for i, data := range [][]byte{ha, hb, check.Poison(out8, m*n), check.Poison(out8, rowsPer*n), scales} {
					if ptrs[i], err = allocMem(h, int64(len(data))); err != nil {
						return err
					}
					if err := copyToDevice(h, ptrs[i], data); err != nil {
						return err
					}
				}
				a, b, c, out, sc := ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4]
				x := matmulArgs{a: a, b: b, c: c, out: out, m: int64(m), k: k, layout: layoutNK, in: dtype.E4M3, scaleA: sc, scaleB: sc + 4}
				got, err := matmulOutput(h, ctx, x, s, rowsPer*n*2)
				if err != nil {
					return err
				}
				for i := 0; i < rowsPer; i++ {
					for j := 0; j < n; j++ {
						if v, want := out8.Get(got, i*n+j), exact(rank*rowsPer+i, j); v != want {
							return fmt.Errorf("rank %d: out[%d, %d] = %g, want %g", rank, i, j, v, want)
						}
					}
				}
				return nil
			})
		})
	}
}

// hc_gemm on a simulated rank: fp8 with scales into bf16 and fp16, and bf16
// with B [K, N] and a workspace, each element against the exact product (c
// poisoned first, its rows padded: ldc > n); then what it refuses.
func TestGemmABI(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]
	s, err := createStream(h)
	require.NoError(t, err)
	wsBytes, err := gemmWorkspaceBytes(h)
	require.NoError(t, err)
	require.Positive(t, wsBytes)
	const m, n, k, ldc = 40, 24, 48, 32
	value := func(i int) float64 { return float64((i*7)%5 - 2) }
	upload := func(data []byte) uint64 {
		p, err := allocMem(h, int64(len(data)))
		require.NoError(t, err)
		require.NoError(t, copyToDevice(h, p, data))
		return p
	}
	scales := upload(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.25)), math.Float32bits(2)))
	ws := upload(make([]byte, wsBytes))
	for _, tc := range []struct {
		name    string
		in, out dtype.DType
		layout  int
		scale   float64
		ws      uint64
	}{
		{"e4m3 to bf16", dtype.E4M3, dtype.BF16, layoutNK, 0.5, 0},
		{"e4m3 to fp16, workspace", dtype.E4M3, dtype.F16, layoutNK, 0.5, ws},
		{"bf16 kn, workspace", dtype.BF16, dtype.BF16, layoutKN, 1, ws},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ha, hb := make([]byte, m*k*tc.in.Size()), make([]byte, n*k*tc.in.Size())
			for i := 0; i < m*k; i++ {
				tc.in.Put(ha, i, value(i))
			}
			bAt := func(kk, j int) int { // B's logical (kk, j) as layout stores it
				if tc.layout == layoutNK {
					return j*k + kk
				}
				return kk*n + j
			}
			for kk := 0; kk < k; kk++ {
				for j := 0; j < n; j++ {
					tc.in.Put(hb, bAt(kk, j), value(kk*n+j+3))
				}
			}
			x := gemmArgs{in: int(tc.in), out: int(tc.out), layout: tc.layout, a: upload(ha), b: upload(hb),
				c: upload(check.Poison(tc.out, m*ldc)), ldc: ldc, m: m, n: n, k: k, workspace: tc.ws}
			if tc.in == dtype.E4M3 {
				x.scaleA, x.scaleB = scales, scales+4
			}
			require.NoError(t, gemm(h, x, s))
			require.NoError(t, synchronizeStream(h, s, 10_000))
			got := make([]byte, m*ldc*tc.out.Size())
			require.NoError(t, copyToHost(h, got, x.c))
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want := 0.0
					for kk := 0; kk < k; kk++ {
						want += value(i*k+kk) * value(kk*n+j+3)
					}
					require.Equal(t, tc.scale*want, tc.out.Get(got, i*ldc+j), "c[%d, %d]", i, j)
				}
			}
		})
	}
	buf, err := allocMem(h, 1<<16)
	require.NoError(t, err)
	ok := gemmArgs{in: 5, out: 1, layout: layoutNK, a: buf, b: buf + 4096, c: buf + 8192, m: 16, n: 16, k: 32}
	for name, tc := range map[string]struct {
		x    gemmArgs
		want error
	}{
		"e4m3 with b [k, n]": {func() gemmArgs { x := ok; x.layout = layoutKN; return x }(), device.ErrNotSupported},
		"fp32 in":            {func() gemmArgs { x := ok; x.in = 3; return x }(), device.ErrInvalidArgument},
		"e4m3 out":           {func() gemmArgs { x := ok; x.out = 5; return x }(), device.ErrInvalidArgument},
		"bf16 with scales":   {func() gemmArgs { x := ok; x.in, x.scaleA = 1, buf; return x }(), device.ErrInvalidArgument},
		"k of 8 bytes":       {func() gemmArgs { x := ok; x.k = 8; return x }(), device.ErrNotSupported},
		"negative ldc":       {func() gemmArgs { x := ok; x.ldc = -1; return x }(), device.ErrInvalidArgument},
	} {
		require.ErrorIs(t, gemm(h, tc.x, s), tc.want, name)
	}
	require.NoError(t, synchronizeStream(h, s, 10_000))
	_, err = createRS2D(h, 16, 16, 5, 0, 0)
	require.ErrorIs(t, err, device.ErrInvalidArgument, "e4m3 is no reduce-scatter's dtype")
}

// matmulOutput runs the GEMM + reduce-scatter x on context ctx of world h
// on stream s, waits for it and returns the first bytes bytes of its
// output.
func matmulOutput(h, ctx int64, x matmulArgs, s uint64, bytes int) ([]byte, error) {
	if err := matmulReduceScatter(ctx, x, s); err != nil {
		return nil, err
	}
	if err := synchronizeStream(h, s, 10_000); err != nil {
		return nil, err
	}
	got := make([]byte, bytes)
	return got, copyToHost(h, got, x.out)
}

// A small product takes the sequential path by default: the overlap
// context's signal value stays (no overlapped call consumed it), the output
// is right with c anywhere or in the small products' context's input
// (hc_rs2d_input, read in place there); held to the overlapped path (before
// the ranks start: every rank must take the same path), the same call
// consumes the value.
func TestMatmulReduceScatterPath(t *testing.T) {
	const world, rowsPer, n, k = 2, 8, 16, 16
	check := func(what string, onInput, advances bool) {
		eachOnesCall(t, world, rowsPer, n, k, func(x onesCall) error {
			args := x.args()
			if onInput {
				input, err := symmetricInput(x.ctx)
				if err != nil {
					return fmt.Errorf("hc_rs2d_input on an overlap context: %w", err)
				}
				args.c = input
			}
			before, err := signalValue(x.ctx)
			if err != nil {
				return err
			}
			if err := x.run(args); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			after, err := signalValue(x.ctx)
			if err != nil {
				return err
			}
			if (after != before) != advances {
				return fmt.Errorf("%s: the overlap context's signal value went from %d to %d", what, before, after)
			}
			return nil
		})
	}
	check("c of the caller's", false, false)
	check("c in the small products' context's input", true, false)
	holdPath(t, true)
	check("held to the overlapped path", false, true)
}
