package gemmrs_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/world"
)

// fp8 operands with row-wise and block-wise scales, overlapped and
// sequential, on 1×4 and 2×2: each rank's A, B and scales come from a
// formula, so every rank computes the fp64 sum of the dequantised products
// for its rows; the output (poisoned first) must be within
// gemmrs.Tolerance of it. M is not a multiple of the GEMM's 128-row tile,
// N not of B's 128-row blocks, K not of the 128-deep k tile. Then what
// RunScaled refuses: scales short of their count, and scales on a bf16
// GemmRS.
func TestFP8RowAndBlockScales(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}} {
		for _, scaling := range []gemm.Scaling{gemm.RowWise, gemm.BlockWise} {
			for _, mode := range []gemmrs.Mode{gemmrs.Overlap, gemmrs.Sequential} {
				t.Run(fmt.Sprintf("%v/%v/%v", shape, scaling, mode), func(t *testing.T) {
					t.Parallel()
					testFP8Scales(t, shape, scaling, mode)
				})
			}
		}
	}
}

func testFP8Scales(t *testing.T, shape bootstrap.Shape, scaling gemm.Scaling, mode gemmrs.Mode) {
	const rowsPer, n, k = 40, 136, 160
	ws := shape.World()
	m := rowsPer * ws
	// value is element i of rank's matrix which (0: A, 1: B) as e4m3
	// stores it, scale element i of its scales (2^-4 .. 2^4).
	value := func(rank, which, i int) float64 {
		return dtype.E4M3ToF64(dtype.F64ToE4M3(float64((rank*131+which*71+i*37)%17-8) / 8))
	}
	scale := func(rank, which, i int) float32 { return float32(math.Ldexp(1, (rank*5+which*3+i*7)%9-4)) }
	na, nb := gemm.ScaleCounts(scaling, m, n, k)
	kb := (k + gemm.ScaleBlock - 1) / gemm.ScaleBlock
	scaleOf := func(rank, i, j, kk int) float64 {
		if scaling == gemm.RowWise {
			return float64(scale(rank, 0, i)) * float64(scale(rank, 1, j))
		}
		return float64(scale(rank, 0, kk/gemm.ScaleBlock*m+i)) * float64(scale(rank, 1, j/gemm.ScaleBlock*kb+kk/gemm.ScaleBlock))
	}
	w := simWorld(t, shape, 10*time.Second)
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		cfg := baseConfig(dtype.BF16, m, n, k)
		cfg.Input, cfg.Mode = dtype.E4M3, mode
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		rank := r.Comm.Rank()
		ha, hb := make([]byte, m*k), make([]byte, n*k)
		for i := range ha {
			ha[i] = dtype.F64ToE4M3(value(rank, 0, i))
		}
		for i := range hb {
			hb[i] = dtype.F64ToE4M3(value(rank, 1, i))
		}
		scales := func(which, count int) []byte {
			b := make([]byte, 0, 4*count)
			for i := 0; i < count; i++ {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scale(rank, which, i)))
			}
			return b
		}
		ptrs, release, err := onDevice(r.Dev, ha, hb, scales(0, na), scales(1, nb), poisonBF16(rowsPer*n)) // out poisoned
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, release()) }()
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, s.Close()) }()
		a := gemmrs.Tensor{Ptr: ptrs[0], Rows: m, Cols: k, DType: dtype.E4M3}
		b := gemmrs.Tensor{Ptr: ptrs[1], Rows: n, Cols: k, DType: dtype.E4M3}
		out := gemmrs.Tensor{Ptr: ptrs[4], Rows: rowsPer, Cols: n, DType: dtype.BF16}
		sc := gemmrs.Scales{Scaling: scaling, A: ptrs[2], B: ptrs[3]}
		if err := g.RunScaled(ctx, a, b, sc, out, s); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		got := make([]byte, rowsPer*n*2)
		if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
			return err
		}
		for i := 0; i < rowsPer; i++ {
			row := rank*rowsPer + i
			for j := 0; j < n; j++ {
				exact, abs := 0.0, 0.0
				for q := 0; q < ws; q++ {
					for kk := 0; kk < k; kk++ {
						p := value(q, 0, row*k+kk) * value(q, 1, j*k+kk) * scaleOf(q, row, j, kk)
						exact += p
						abs += math.Abs(p)
					}
				}
				v := dtype.BF16.Get(got, i*n+j)
				if tol := gemmrs.Tolerance(dtype.BF16, k, ws, shape.Nodes, abs); !(math.Abs(v-exact) <= tol) {
					return fmt.Errorf("rank %d: out[%d, %d] = %g, want %g (tolerance %.3g)", rank, i, j, v, exact, tol)
				}
			}
		}
		short := sc
		short.B = ptrs[3].Add(4) // one fp32 short of B's scales
		if err := g.RunScaled(ctx, a, b, short, out, s); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Errorf("scales one short: got %v, want ErrInvalidArgument", err)
		}
		none := gemmrs.Scales{Scaling: scaling}
		if err := g.RunScaled(ctx, a, b, none, out, s); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Errorf("%v scaling without scales: got %v, want ErrInvalidArgument", scaling, err)
		}
		return nil
	})
	require.NoError(t, err)
}

// poisonBF16 is count bf16 NaNs.
func poisonBF16(count int) []byte {
	b := make([]byte, 2*count)
	for i := 0; i < count; i++ {
		binary.LittleEndian.PutUint16(b[2*i:], 0x7fc1)
	}
	return b
}
