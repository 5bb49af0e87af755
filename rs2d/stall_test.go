package rs2d_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// On 2 × 2, rank 2 (node 1, local rank 0) never calls. The device timeouts
// name the word each rank waited on (rank 1's is its rail peer's, rank 3's
// block, though rank 3 is alive and itself waits for rank 2) and the waits
// stuck beside it, among them those for rank 2, so that the first error a
// user reads names the missing rank; at Close the ranks compare their call
// counts and every rank's Close names rank 2, with its node and local rank.
func TestCloseNamesTheRankThatNeverCalled(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.String(), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 300 * time.Millisecond}})
			require.NoError(t, err)
			defer w.Close()
			ctx := testContext(t)
			syncErrs := make([]error, 4)
			closeErrs := make([]error, 4)
			err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, Engine: engine, Timeout: 10 * time.Second})
				if err != nil {
					return err
				}
				if r.Comm.Rank() != 2 {
					in, out, free := rankBuffers(t, r.Dev, 8, 4, 4, dtype.F32)
					defer free()
					s, err := r.Dev.NewStream(device.Normal)
					if err != nil {
						return err
					}
					defer s.Close()
					if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
						return err
					}
					syncErrs[r.Comm.Rank()] = s.Synchronize(ctx)
				}
				closeErrs[r.Comm.Rank()] = rs.Close()
				return nil
			})
			require.NoError(t, err)
			for _, rank := range []int{0, 1, 3} {
				require.ErrorIs(t, syncErrs[rank], device.ErrTimeout, "rank %d", rank)
			}
			require.ErrorContains(t, syncErrs[1], "rail block from rank 3 (node 1, local rank 1), sent once every rank of node 1")
			for _, rank := range []int{0, 1, 3} {
				require.ErrorContains(t, syncErrs[rank], "rank 2 (node 1, local rank 0)", "rank %d", rank)
			}
			for rank, err := range closeErrs {
				var se *rs2d.StallError
				require.ErrorAs(t, err, &se, "rank %d: %v", rank, err)
				require.Equal(t, []uint64{1, 1, 0, 1}, se.Calls)
				require.ErrorIs(t, err, device.ErrPeer)
				require.ErrorContains(t, err, "rank 2 (node 1, local rank 0) made 0 call(s) on this context, the others 1", "rank %d", rank)
			}
		})
	}
}

// A rank that never comes to Close is named, with its node and local rank,
// by the others' Close, within the context's timeout.
func TestCloseNamesARankThatNeverCame(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer w.Close()
	ctx := testContext(t)
	const bound = 300 * time.Millisecond
	closeErrs := make([]error, 4)
	var others sync.WaitGroup
	others.Add(3)
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, Timeout: bound})
		if err != nil {
			return err
		}
		if r.Comm.Rank() == 3 {
			others.Wait() // closes only after the others gave up on it
		} else {
			defer others.Done()
		}
		start := time.Now()
		closeErrs[r.Comm.Rank()] = rs.Close()
		if took := time.Since(start); r.Comm.Rank() != 3 && took > 10*bound {
			return errors.New("Close took too long")
		}
		return nil
	})
	require.NoError(t, err)
	for _, rank := range []int{0, 1, 2} {
		require.ErrorIs(t, closeErrs[rank], device.ErrTimeout, "rank %d", rank)
		require.ErrorContains(t, closeErrs[rank], "rank 3 (node 1, local rank 1) never came to Close", "rank %d", rank)
	}
	// Rank 3's own Close finds the others' contributions (the in-process
	// bootstrap keeps them), so whether it fails is no concern here.
}
