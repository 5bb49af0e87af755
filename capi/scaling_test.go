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
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/internal/check"
)

// scaledOperands are one rank's fp8 operands and scales for a product of
// m × n × k with scaling (HC_SCALE_*): values of -1, 0 and 1, scales powers
// of two from 2^-3 to 2^3, so that every fp32 sum is exact and the fp64
// product differs from C by C's one rounding (and the reduce-scatter's).
type scaledOperands struct {
	m, n, k, scaling, rank int
}

func (o scaledOperands) a(i, kk int) float64 { return float64((o.rank*5+i*3+kk*7)%3 - 1) }
func (o scaledOperands) b(j, kk int) float64 { return float64((o.rank*11+j*5+kk)%3 - 1) }

// scaleA and scaleB are element e of the scale arrays, as the scaling lays
// them out (its index, then its value).
func (o scaledOperands) scaleA(e int) float32 { return float32(math.Ldexp(1, (o.rank+e*5)%7-3)) }
func (o scaledOperands) scaleB(e int) float32 { return float32(math.Ldexp(1, (o.rank*3+e*2)%7-3)) }

func (o scaledOperands) counts() (na, nb int) {
	switch o.scaling {
	case scaleRow:
		return o.m, o.n
	case scaleBlock:
		kb := (o.k + 127) / 128
		return kb * o.m, (o.n + 127) / 128 * kb
	}
	return 1, 1
}

// exact is Σ_kk a·b·scales of element (i, j).
func (o scaledOperands) exact(i, j int) (sum, abs float64) {
	kb := (o.k + 127) / 128
	for kk := 0; kk < o.k; kk++ {
		var s float64
		switch o.scaling {
		case scaleRow:
			s = float64(o.scaleA(i)) * float64(o.scaleB(j))
		case scaleBlock:
			s = float64(o.scaleA(kk/128*o.m+i)) * float64(o.scaleB(j/128*kb+kk/128))
		default:
			s = float64(o.scaleA(0)) * float64(o.scaleB(0))
		}
		p := o.a(i, kk) * o.b(j, kk) * s
		sum += p
		abs += math.Abs(p)
	}
	return sum, abs
}

// upload puts A [m, k], B [n, k] and the scales on rank h's device.
func (o scaledOperands) upload(t *testing.T, h int64) (a, b, sa, sb uint64) {
	t.Helper()
	ha, hb := make([]byte, o.m*o.k), make([]byte, o.n*o.k)
	for i := 0; i < o.m; i++ {
		for kk := 0; kk < o.k; kk++ {
			dtype.E4M3.Put(ha, i*o.k+kk, o.a(i, kk))
		}
	}
	for j := 0; j < o.n; j++ {
		for kk := 0; kk < o.k; kk++ {
			dtype.E4M3.Put(hb, j*o.k+kk, o.b(j, kk))
		}
	}
	na, nb := o.counts()
	scales := func(n int, at func(int) float32) []byte {
		out := make([]byte, 0, 4*n)
		for e := 0; e < n; e++ {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(at(e)))
		}
		return out
	}
	var ptrs [4]uint64
	for i, data := range [][]byte{ha, hb, scales(na, o.scaleA), scales(nb, o.scaleB)} {
		p, err := allocMem(h, int64(len(data)))
		require.NoError(t, err)
		require.NoError(t, copyToDevice(h, p, data))
		ptrs[i] = p
	}
	return ptrs[0], ptrs[1], ptrs[2], ptrs[3]
}

// hc_gemm_ex on a simulated rank: each scaling, into bf16 with c's rows
// padded (ldc > n), M, N and K off the tiles and the 128-blocks, every
// element within one rounding of the exact scaled product (c poisoned
// first); then what it refuses.
func TestGemmExABI(t *testing.T) {
	h := simRanks(t, 1, 1)[0]
	s, err := createStream(h)
	require.NoError(t, err)
	const m, n, k, ldc = 130, 136, 176, 144
	for _, scaling := range []int{scaleTensor, scaleRow, scaleBlock} {
		t.Run(fmt.Sprint(scaling), func(t *testing.T) {
			o := scaledOperands{m: m, n: n, k: k, scaling: scaling}
			a, b, sa, sb := o.upload(t, h)
			c, err := allocMem(h, m*ldc*2)
			require.NoError(t, err)
			require.NoError(t, copyToDevice(h, c, check.Poison(dtype.BF16, m*ldc)))
			x := gemmArgs{in: 5, out: 1, layout: layoutNK, scaling: scaling, a: a, b: b, c: c, scaleA: sa, scaleB: sb,
				ldc: ldc, m: m, n: n, k: k}
			require.NoError(t, gemm(h, x, s))
			require.NoError(t, synchronizeStream(h, s, 10_000))
			got := make([]byte, m*ldc*2)
			require.NoError(t, copyToHost(h, got, c))
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want, _ := o.exact(i, j)
					v := dtype.BF16.Get(got, i*ldc+j)
					require.LessOrEqual(t, math.Abs(v-want), math.Abs(want)*dtype.BF16.UnitRoundoff(), "c[%d, %d] = %g, want %g", i, j, v, want)
				}
			}
			if scaling == scaleTensor {
				return
			}
			short := x
			short.scaleB = sb + 4 // one fp32 short
			require.ErrorIs(t, gemm(h, short, s), device.ErrInvalidArgument, "scales past their allocation")
			none := x
			none.scaleA = 0
			require.ErrorIs(t, gemm(h, none, s), device.ErrInvalidArgument, "no scales of A")
			bf16 := x
			bf16.in, bf16.scaleA, bf16.scaleB = 1, 0, 0
			require.ErrorIs(t, gemm(h, bf16, s), device.ErrInvalidArgument, "scaled bf16")
		})
	}
	bad := gemmArgs{in: 5, out: 1, layout: layoutNK, scaling: 3, a: 4096, b: 8192, c: 16384, m: 16, n: 16, k: 32}
	require.ErrorIs(t, gemm(h, bad, s), device.ErrInvalidArgument, "scaling 3")
}

// hc_rs2d_scaled_matmul_reduce_scatter_ex on a simulated 1×2 and 2×2
// world, row-wise and block-wise: each output element within
// gemmrs.Tolerance of the exact sum over ranks of the scaled products
// (c and out poisoned first).
func TestScaledMatmulReduceScatterEx(t *testing.T) {
	for _, shape := range []struct{ nodes, gpus int }{{1, 2}, {2, 2}} {
		for _, scaling := range []int{scaleRow, scaleBlock} {
			forEachPath(t, fmt.Sprintf("%dx%d/%d", shape.nodes, shape.gpus, scaling), func(t *testing.T) {
				const rowsPer, n, k = 36, 136, 144
				hs := simRanks(t, shape.nodes, shape.gpus)
				world := len(hs)
				m := rowsPer * world
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
					o := scaledOperands{m: m, n: n, k: k, scaling: scaling, rank: rank}
					a, b, sa, sb := o.upload(t, h)
					c, err := allocMem(h, int64(m*n*2))
					if err != nil {
						return err
					}
					out, err := allocMem(h, int64(rowsPer*n*2))
					if err != nil {
						return err
					}
					if err := copyToDevice(h, c, check.Poison(dtype.BF16, m*n)); err != nil {
						return err
					}
					if err := copyToDevice(h, out, check.Poison(dtype.BF16, rowsPer*n)); err != nil {
						return err
					}
					x := matmulArgs{a: a, b: b, c: c, out: out, m: int64(m), k: k, layout: layoutNK, in: dtype.E4M3,
						scaling: scaling, scaleA: sa, scaleB: sb}
					got, err := matmulOutput(h, ctx, x, s, rowsPer*n*2)
					if err != nil {
						return err
					}
					for i := 0; i < rowsPer; i++ {
						for j := 0; j < n; j++ {
							want, abs := 0.0, 0.0
							for r := 0; r < world; r++ {
								q := o
								q.rank = r
								e, ab := q.exact(rank*rowsPer+i, j)
								want, abs = want+e, abs+ab
							}
							v := dtype.BF16.Get(got, i*n+j)
							if tol := gemmrs.Tolerance(dtype.BF16, k, world, shape.nodes, abs); !(math.Abs(v-want) <= tol) {
								return fmt.Errorf("rank %d: out[%d, %d] = %g, want %g (tolerance %.3g)", rank, i, j, v, want, tol)
							}
						}
					}
					bad := x
					bad.scaling = 9
					if err := matmulReduceScatter(ctx, bad, s); !errors.Is(err, device.ErrInvalidArgument) {
						return fmt.Errorf("scaling 9: got %v, want ErrInvalidArgument", err)
					}
					return nil
				})
			})
		}
	}
}
