package internode

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/nccl"
)

// fakeComm is an NCCL communicator whose teardown calls are counted and
// may block (a peer that is gone) until release is closed.
type fakeComm struct {
	destroyed, aborted atomic.Int32
	blockDestroy       bool
	asyncErr           error
	release            chan struct{}
	onAbort            func() // what aborting ends (NCCL ends the communicator's kernels)
}

func (f *fakeComm) Group(fn func() error) error { return fn() }
func (f *fakeComm) Send(nccl.Ptr, int64, dtype.DType, int, uintptr) error {
	return nil
}
func (f *fakeComm) Recv(nccl.Ptr, int64, dtype.DType, int, uintptr) error {
	return nil
}
func (f *fakeComm) AsyncError() error { return f.asyncErr }
func (f *fakeComm) Destroy() error {
	f.destroyed.Add(1)
	if f.blockDestroy {
		<-f.release
	}
	return nil
}
func (f *fakeComm) Abort() error {
	f.aborted.Add(1)
	if f.onAbort != nil {
		f.onAbort()
	}
	return nil
}

// ncclRailOn builds the NCCL transport's state around fake communicators,
// with its lanes, events and buffers on a simulated device.
func ncclRailOn(t *testing.T, dev device.Device, comms ...*fakeComm) *ncclRail {
	t.Helper()
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 1}
	ep := Endpoint{Dev: dev, Place: placeOf(shape, 0), BlockBytes: 256, DType: dtype.F32, Lanes: len(comms), Timeout: 200 * time.Millisecond}
	r := &ncclRail{ep: ep}
	for _, c := range comms {
		r.comms = append(r.comms, c)
	}
	require.NoError(t, r.allocate())
	return r
}

// The teardown of the NCCL transport is bounded: with the lanes' work done,
// the communicators are destroyed; with work stuck on a lane (waiting for a
// peer that is gone) or an asynchronous error, they are aborted and the
// error says so; a Destroy that never returns is given up on at the
// timeout, leaving the buffers allocated, instead of hanging Close.
func TestNCCLTeardownIsBounded(t *testing.T) {
	h := sim.NewHost("teardown")
	dev := sim.New(h, 0, sim.Options{WaitTimeout: time.Minute})
	defer dev.Close()
	before := sim.Live()

	t.Run("work done: destroyed", func(t *testing.T) {
		c := &fakeComm{}
		r := ncclRailOn(t, dev, c, c)
		require.NoError(t, r.Close())
		require.EqualValues(t, 2, c.destroyed.Load())
		require.Zero(t, c.aborted.Load())
		require.Equal(t, before, sim.Live())
	})

	t.Run("asynchronous error: aborted", func(t *testing.T) {
		c := &fakeComm{asyncErr: errors.New("remote process exited")}
		r := ncclRailOn(t, dev, c)
		err := r.Close()
		require.ErrorContains(t, err, "aborted instead of destroyed")
		require.ErrorContains(t, err, "remote process exited")
		require.Zero(t, c.destroyed.Load())
		require.EqualValues(t, 1, c.aborted.Load())
		require.Equal(t, before, sim.Live())
	})

	t.Run("work stuck: aborted within the timeout", func(t *testing.T) {
		word, err := dev.Alloc(256)
		require.NoError(t, err)
		defer dev.Free(word)
		c := &fakeComm{onAbort: func() { require.NoError(t, dev.CopyToDevice(word, []byte{1, 0, 0, 0})) }}
		r := ncclRailOn(t, dev, c)
		require.NoError(t, dev.Memset32(r.lanes[0], word, 0, 1))
		require.NoError(t, dev.WaitValue32(r.lanes[0], device.Word{Addr: word, Label: "a peer's send"}, device.GEQ, 1))
		start := time.Now()
		err = r.Close()
		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorIs(t, err, device.ErrTimeout)
		require.ErrorContains(t, err, "aborted instead of destroyed")
		require.Zero(t, c.destroyed.Load())
		require.EqualValues(t, 1, c.aborted.Load())
	})

	t.Run("destroy never returns: given up on", func(t *testing.T) {
		c := &fakeComm{blockDestroy: true, release: make(chan struct{})}
		r := ncclRailOn(t, dev, c)
		start := time.Now()
		err := r.Close()
		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorIs(t, err, device.ErrTimeout)
		require.ErrorContains(t, err, "ncclCommDestroy (rank 0, rail 0 lane 0) did not return in time")
		require.ErrorContains(t, err, "buffers stay allocated")
		close(c.release)
		require.NoError(t, r.release(true), "what was left is freed later") // the test's own clean-up
	})
	require.Equal(t, before, sim.Live())
}

// NVSHMEM's collective calls are bounded: one that does not return within
// the bound is left running, NVSHMEM is marked unusable in the process, and
// the error says so.
func TestShmemCollectiveIsBounded(t *testing.T) {
	shmemProc.mu.Lock()
	saved := shmemProc.broken
	shmemProc.broken = nil
	shmemProc.mu.Unlock()
	defer func() {
		shmemProc.mu.Lock()
		shmemProc.broken = saved
		shmemProc.mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, shmemCollective(ctx, "nvshmem_free (PE 0)", func() error { return nil }))
	failed := fmt.Errorf("nvshmem: nvshmem_free: bad pointer: %w", device.ErrInvalidArgument)
	require.ErrorIs(t, shmemCollective(ctx, "nvshmem_free (PE 0)", func() error { return failed }), device.ErrInvalidArgument)
	shmemProc.mu.Lock()
	require.Nil(t, shmemProc.broken, "a call that returned an error leaves NVSHMEM usable")
	shmemProc.mu.Unlock()

	release := make(chan struct{})
	defer close(release)
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	err := shmemCollective(short, "nvshmemx_hostlib_finalize", func() error { <-release; return nil })
	require.ErrorIs(t, err, device.ErrTimeout)
	require.ErrorContains(t, err, "nvshmemx_hostlib_finalize did not return in time")
	require.ErrorContains(t, err, "NVSHMEM has no abort")
	shmemProc.mu.Lock()
	require.Error(t, shmemProc.broken, "NVSHMEM is not used again")
	shmemProc.mu.Unlock()
}
