package rs2d_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// Documented behaviour (Roundings): on 2 × 2 in fp16, +40000 on node 0's
// ranks and −40000 on node 1's sum to 0 in fp32, but each node's partial
// sum (±80000) is rounded to fp16 before the rail stage and overflows, so
// the result is NaN; inside one node (1 × 4) the same inputs give 0.
func TestNodePartialsAreRoundedToTheDtype(t *testing.T) {
	for _, tc := range []struct {
		shape bootstrap.Shape
		nan   bool
	}{{bootstrap.Shape{Nodes: 2, LocalSize: 2}, true}, {bootstrap.Shape{Nodes: 1, LocalSize: 4}, false}} {
		w, err := world.Sim(tc.shape, world.SimOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		const m, n = 4, 8
		got := make([][]byte, 4)
		err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
			rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.F16})
			if err != nil {
				return err
			}
			defer rs.Close()
			in, out, free := rankBuffers(t, r.Dev, m, n, 4, dtype.F16)
			defer free()
			v := 40000.0
			if r.Comm.Rank() >= 2 {
				v = -v
			}
			host := make([]byte, m*n*2)
			for i := 0; i < m*n; i++ {
				dtype.F16.Put(host, i, v)
			}
			if err := r.Dev.CopyToDevice(in.Ptr, host); err != nil {
				return err
			}
			s, err := r.Dev.NewStream(device.Normal)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			got[r.Comm.Rank()] = make([]byte, n*2)
			return r.Dev.CopyToHost(got[r.Comm.Rank()], out.Ptr)
		})
		cancel()
		require.NoError(t, err)
		require.NoError(t, w.Close())
		for rank, b := range got {
			for i := 0; i < n; i++ {
				x := dtype.F16.Get(b, i)
				if tc.nan {
					require.True(t, math.IsNaN(x), "%v rank %d element %d: %v", tc.shape, rank, i, x)
				} else {
					require.Zero(t, x, "%v rank %d element %d", tc.shape, rank, i)
				}
			}
		}
	}
}
