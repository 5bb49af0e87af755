package nvls_test

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
	"github.com/seed12530e24/hiercoll/intranode/nvls"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// The NVLS engine's calls on one node, on the simulated multicast objects,, driven through the engine interface
// as the rs2d loop drives them (Begin, one Step, End), match the fp64
// reference on every dtype, several calls in a row; a step of a part of
// each block is refused before anything is enqueued.
func TestNVLSEngineCalls(t *testing.T) {
	const lws, rowsPer, cols, calls = 3, 5, 7, 3
	shape := bootstrap.Shape{Nodes: 1, LocalSize: lws}
	for _, dt := range dtype.All {
		t.Run(dt.String(), func(t *testing.T) {
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
			require.NoError(t, err)
			defer func() { require.NoError(t, w.Close()) }()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
			inputs := make([][][]byte, calls)
			for i := range inputs {
				inputs[i] = make([][]byte, lws)
				for r := range inputs[i] {
					inputs[i][r] = check.Random(rng, dt, rowsPer*lws*cols)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				return runNVLSCalls(ctx, r, dt, inputs, rowsPer, cols)
			})
			require.NoError(t, err)
		})
	}
}

func runNVLSCalls(ctx context.Context, r world.Rank, dt dtype.DType, inputs [][][]byte, rowsPer, cols int) (err error) {
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return err
	}
	lws, es := place.Shape.LocalSize, dt.Size()
	spec := intranode.Spec{Place: place, DType: dt, Cols: cols, MaxRows: rowsPer * lws, Proto: symm.Growing, ReductionSMs: 4}
	m := nvls.NewMaker(spec)
	if m.Permit, err = device.AllowMulticast(r.Dev, "nvls engine test"); err != nil {
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
	e, err := m.Make(ctx, intranode.Env{Spec: spec, Dev: r.Dev, Comm: r.Comm, Heap: heap})
	if err != nil {
		return errors.Join(err, heap.Close())
	}
	defer func() {
		err = errors.Join(err, r.Comm.Barrier(ctx), e.Close(), heap.Close())
	}()
	in, err := r.Dev.Alloc(int64(rowsPer * lws * cols * es))
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
	epoch := symm.Epoch(0)
	for i := range inputs {
		epoch = epoch.Next()
		if err := r.Dev.CopyToDevice(in, inputs[i][place.Rank]); err != nil {
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
		if rep := check.ReduceScatter(dt, inputs[i], place.Rank, rowsPer, cols).Compare(got, 1); !rep.OK() {
			return fmt.Errorf("call %d: %v", i, rep)
		}
	}
	return nil
}
