package rs2d_test

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
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// TestPlacedCallsMatchReference: a producer that places its rows for the
// node peers itself (a copy per target after the peer's ready flag, then
// the placed word) and keeps its own local rank's rows in its input, for
// several calls with fresh int32 inputs, interleaved with ordinary calls on
// the same context; the receive rows and outputs are poisoned first, and
// every output must match the reference bit for bit.
func TestPlacedCallsMatchReference(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}, {Nodes: 2, LocalSize: 1}} {
		t.Run(shape.String(), func(t *testing.T) {
			t.Parallel()
			const dt, rowsPer, n, calls = dtype.I32, 5, 12, 4
			ws := shape.World()
			m := rowsPer * ws
			in := &inputs{calls: map[int][][]byte{}, seed: rand.Uint64(), world: ws, dt: dt, count: m * n}
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, w.Close()) })
			err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) (err error) {
				rank, dev := r.Comm.Rank(), r.Dev
				c, err := rs2d.New(ctx, r.Comm, dev, rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineCopy})
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, c.Close()) }()
				es := int64(dt.Size())
				inPtr, err := dev.Alloc(int64(m*n) * es)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, dev.Free(inPtr)) }()
				outPtr, err := dev.Alloc(int64(rowsPer*n) * es)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, dev.Free(outPtr)) }()
				s, err := dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, s.Close()) }()
				// The producer runs on a stream of its own: its waits for
				// the peers' ready flags end only once their calls start.
				prod, err := dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, prod.Close()) }()
				produced, err := dev.NewEvent()
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, produced.Close()) }()
				inT := rs2d.Tensor{Ptr: inPtr, Rows: m, Cols: n, DType: dt}
				outT := rs2d.Tensor{Ptr: outPtr, Rows: rowsPer, Cols: n, DType: dt}
				blockBytes := int64(rowsPer*n) * es
				for call := 0; call < calls; call++ {
					x := in.get(call)
					placed := call%2 == 0
					if err := dev.CopyToDevice(inPtr, x[rank]); err != nil {
						return err
					}
					if err := dev.CopyToDevice(outPtr, check.Poison(dt, rowsPer*n)); err != nil {
						return err
					}
					if err := c.PoisonReceive(s, m, 0x7fffffff); err != nil {
						return err
					}
					if placed {
						sig := c.NextSignals()
						for _, d := range c.ConsumptionOrder() {
							tg, err := sig.Target(d, m)
							if err != nil {
								return err
							}
							if !tg.Local {
								if err := sig.WaitReady(prod, tg); err != nil {
									return err
								}
								if err := dev.Copy(prod, tg.Rows, inPtr.Add(int64(d)*blockBytes), blockBytes); err != nil {
									return err
								}
							}
							if err := sig.RaisePlaced(prod, tg); err != nil {
								return err
							}
						}
						// The peers' rows in the input are not read: spoil them.
						for d := 0; d < ws; d++ {
							if d%shape.LocalSize != r.Comm.LocalRank() {
								if err := dev.Memset32(prod, inPtr.Add(int64(d)*blockBytes), 0x7fffffff, blockBytes/4); err != nil {
									return err
								}
							}
						}
						if err := c.ReduceScatterPlaced(ctx, inT, outT, s); err != nil {
							return err
						}
						if err := produced.Record(prod); err != nil {
							return err
						}
						err = s.WaitEvent(produced)
					} else {
						err = c.ReduceScatter(ctx, inT, outT, s)
					}
					if err != nil {
						return err
					}
					if err := s.Synchronize(ctx); err != nil {
						return err
					}
					got := make([]byte, blockBytes)
					if err := dev.CopyToHost(got, outPtr); err != nil {
						return err
					}
					if rep := check.ReduceScatter(dt, x, rank, rowsPer, n).Compare(got, 0); !rep.OK() {
						return fmt.Errorf("call %d (placed %v): %v", call, placed, rep)
					}
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// TestTargetArguments: targets exist for every rank and valid M only; the
// own local rank's rows are Local.
func TestTargetArguments(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })
	err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) (err error) {
		c, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, c.Close()) }()
		sig := c.NextSignals()
		for _, bad := range []struct{ dest, m int }{{-1, 8}, {4, 8}, {0, 0}, {0, 6}, {0, 12}} {
			if _, err := sig.Target(bad.dest, bad.m); !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("Target(%d, %d): %v, want ErrInvalidArgument", bad.dest, bad.m, err)
			}
		}
		for d := 0; d < 4; d++ {
			tg, err := sig.Target(d, 8)
			if err != nil {
				return err
			}
			if local := d%2 == r.Comm.LocalRank(); tg.Local != local || (tg.Rows == 0) != local {
				return fmt.Errorf("rank %d: Target(%d) = %+v: Local should be %v, with rows only when not", r.Comm.Rank(), d, tg, local)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
