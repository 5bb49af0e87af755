// Package enginetest drives an intra-node engine through the engine
// interface as rs2d's call loop does (Begin, a whole Step, End), on one
// simulated node, for the engines' own tests.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/streams"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// NewMaker makes the engine under test's maker for spec on dev.
type NewMaker func(spec intranode.Spec, dev device.Device) (intranode.Maker, error)

// The node and the calls WholeCalls runs.
const (
	localSize = 3
	rowsPer   = 5
	cols      = 7
	calls     = 3
)

// WholeCalls runs a few calls of the engine newMaker makes on one simulated
// node, for every dtype, on fresh random data each call, and checks each
// rank's block against the fp64 reference; a step of a part of each block
// is refused before anything is enqueued (the engines that move whole
// blocks only). The simulated waits are generous: the test is about
// results, not time.
func WholeCalls(t *testing.T, newMaker NewMaker) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: localSize}
	for _, dt := range dtype.All {
		t.Run(dt.String(), func(t *testing.T) {
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: time.Minute}})
			require.NoError(t, err)
			defer func() { require.NoError(t, w.Close()) }()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
			inputs := make([][][]byte, calls)
			for i := range inputs {
				inputs[i] = make([][]byte, localSize)
				for r := range inputs[i] {
					inputs[i][r] = check.Random(rng, dt, rowsPer*localSize*cols)
				}
			}
			err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) error {
				return rankCalls(ctx, r, dt, inputs, newMaker)
			})
			require.NoError(t, err)
		})
	}
}

// rankCalls is one rank of WholeCalls: the engine made on a heap of its
// own regions (the context's streams beside it), then the calls.
func rankCalls(ctx context.Context, r world.Rank, dt dtype.DType, inputs [][][]byte, newMaker NewMaker) (err error) {
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return err
	}
	spec := intranode.Spec{Place: place, DType: dt, Cols: cols, MaxRows: rowsPer * localSize, Proto: symm.Growing, ReductionSMs: 4}
	m, err := newMaker(spec, r.Dev)
	if err != nil {
		return err
	}
	if err := m.Prepare(r.Dev); err != nil {
		return err
	}
	var l symm.Layout
	m.AddTo(&l)
	heap, err := symm.New(ctx, r.Comm, r.Dev, &l)
	if err != nil {
		return err
	}
	set, err := streams.NewSet(r.Dev, 1)
	if err != nil {
		return errors.Join(err, heap.Close())
	}
	e, err := m.Make(ctx, intranode.Env{Spec: spec, Dev: r.Dev, Comm: r.Comm, Heap: heap, Streams: set})
	if err != nil {
		return errors.Join(err, set.Close(), heap.Close())
	}
	defer func() {
		err = errors.Join(err, r.Comm.Barrier(ctx), e.Close(), set.Close(), heap.Close())
	}()
	return runCalls(ctx, r, e, dt, inputs)
}

func runCalls(ctx context.Context, r world.Rank, e intranode.Engine, dt dtype.DType, inputs [][][]byte) error {
	es := dt.Size()
	in, err := r.Dev.Alloc(int64(rowsPer * localSize * cols * es))
	if err != nil {
		return err
	}
	defer r.Dev.Free(in)
	out, err := r.Dev.Alloc(int64(rowsPer * cols * es))
	if err != nil {
		return err
	}
	defer r.Dev.Free(out)
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer s.Close()
	epoch, rank := symm.Epoch(0), r.Comm.Rank()
	for i := range inputs {
		epoch = epoch.Next()
		if err := r.Dev.CopyToDevice(in, inputs[i][rank]); err != nil {
			return err
		}
		call := intranode.Call{Epoch: epoch, Input: in, RowsPer: rowsPer}
		step := intranode.Step{Call: call, Rows: rowsPer, ReduceTo: out, Chunks: 2, First: true, Last: true}
		part := step
		part.Rows = rowsPer - 1
		if _, err := e.Step(s, part); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Errorf("a step of part of each block: %v, want an invalid-argument error", err)
		}
		if err := e.Begin(s, call); err != nil {
			return err
		}
		if _, err := e.Step(s, step); err != nil {
			return err
		}
		if err := e.End(s, call); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		got := make([]byte, rowsPer*cols*es)
		if err := r.Dev.CopyToHost(got, out); err != nil {
			return err
		}
		if rep := check.ReduceScatter(dt, inputs[i], rank, rowsPer, cols).Compare(got, 1); !rep.OK() {
			return fmt.Errorf("call %d: %v", i, rep)
		}
	}
	return nil
}
