package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
)

// hc_rs2d_matmul_reduce_scatter on simulated worlds, B in both layouts:
// small integer operands make every product and sum exact in bf16, so the
// output must equal the exact sum of the ranks' products bit for bit; c and
// out start poisoned. Three calls in a row, on fresh operands.
func TestMatmulReduceScatter(t *testing.T) {
	for _, shape := range []struct{ nodes, gpus int }{{1, 2}, {2, 2}} {
		for _, layout := range []int{layoutKN, layoutNK} {
			t.Run(fmt.Sprintf("%dx%d/layout%d", shape.nodes, shape.gpus, layout), func(t *testing.T) {
				const dt, rowsPer, n, k = dtype.BF16, 20, 24, 16
				hs := simRanks(t, shape.nodes, shape.gpus)
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
					ctx, err := createRS2D(h, int64(m), n, 1, overlapWithGEMM, 0)
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
						if err := matmulReduceScatter(ctx, x, s); err != nil {
							return err
						}
						if err := synchronizeStream(h, s, 10_000); err != nil {
							return err
						}
						got := make([]byte, rowsPer*n*2)
						if err := copyToHost(h, got, out); err != nil {
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
	}
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
