package rs2d_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// A traced call follows each node peer's rows through the copy-engine
// scatter: in the rank swizzle's order, each copy free to start only after
// the peer's ready flag and (with GEMM overlap) the producer's signal, and
// landing after that. The producer raises its signals gap apart, so the
// signals seen must be spread at least that far.
func TestTraceFollowsEachPeer(t *testing.T) {
	const gap = 20 * time.Millisecond
	for _, overlap := range []bool{false, true} {
		t.Run(fmt.Sprintf("overlap=%v", overlap), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
			require.NoError(t, err)
			defer w.Close()
			ws, rowsPer, n, dt := shape.World(), 3, 16, dtype.F32
			m := rowsPer * ws
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineCopy,
					OverlapWithGEMM: overlap, Timeout: 20 * time.Second}, ws)
				if err != nil {
					return err
				}
				defer tr.close()
				if _, err := tr.rs.LastStages(); err == nil {
					return fmt.Errorf("LastStages before any traced call: no error")
				}
				var produce func(rs2d.Signals) error
				if overlap {
					produce = func(sig rs2d.Signals) error {
						for _, dest := range tr.rs.ConsumptionOrder() {
							time.Sleep(gap)
							if err := sig.Raise(tr.producer, dest); err != nil {
								return err
							}
						}
						return nil
					}
				}
				st, err := tr.call(ctx, produce)
				if err != nil {
					return err
				}
				return checkPeerStages(st, r.Comm.LocalRank(), shape.LocalSize, overlap, gap)
			})
			require.NoError(t, err)
		})
	}
}

// tracedRank is one rank's context, with tracing on, its buffers, a stream
// for the calls and one for the producer.
type tracedRank struct {
	rs          *rs2d.Context
	in, out     rs2d.Tensor
	s, producer device.Stream
	close       func()
}

func newTracedRank(ctx context.Context, t *testing.T, r world.Rank, cfg rs2d.Config, ws int) (*tracedRank, error) {
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return nil, err
	}
	tr := &tracedRank{rs: rs}
	in, out, free := rankBuffers(t, r.Dev, cfg.MaxM, cfg.N, ws, cfg.DType)
	tr.in, tr.out = in, out
	tr.close = func() {
		for _, st := range []device.Stream{tr.s, tr.producer} {
			if st != nil {
				_ = st.Close()
			}
		}
		free()
		_ = rs.Close()
	}
	for _, st := range []*device.Stream{&tr.s, &tr.producer} {
		if *st, err = r.Dev.NewStream(device.Normal); err != nil {
			tr.close()
			return nil, err
		}
	}
	if err := rs.Trace(true); err != nil {
		tr.close()
		return nil, err
	}
	return tr, nil
}

// call runs one traced call whose signals produce raises (with overlap)
// and returns its stages.
func (tr *tracedRank) call(ctx context.Context, produce func(rs2d.Signals) error) (rs2d.Stages, error) {
	sig := tr.rs.NextSignals()
	if err := tr.rs.ReduceScatter(ctx, tr.in, tr.out, tr.s); err != nil {
		return rs2d.Stages{}, err
	}
	if produce != nil {
		if err := produce(sig); err != nil {
			return rs2d.Stages{}, err
		}
	}
	if err := tr.s.Synchronize(ctx); err != nil {
		return rs2d.Stages{}, err
	}
	return tr.rs.LastStages()
}

func checkPeerStages(st rs2d.Stages, me, lws int, overlap bool, gap time.Duration) error {
	order := intranode.RankSwizzle(me, lws)
	order = order[:len(order)-1] // the own block is not copied
	if len(st.Peers) != len(order) {
		return fmt.Errorf("local rank %d: %d traced peers (%+v), want %d", me, len(st.Peers), st.Peers, len(order))
	}
	for i, p := range st.Peers {
		switch {
		case p.LocalRank != order[i]:
			return fmt.Errorf("local rank %d: peer %d traced is local rank %d, want %d (order %v)", me, i, p.LocalRank, order[i], order)
		case p.Ready <= 0 || p.Landed < p.Ready:
			return fmt.Errorf("local rank %d: peer %d: ready flag seen at %v, landed at %v", me, p.LocalRank, p.Ready, p.Landed)
		case !overlap && p.Signal != 0:
			return fmt.Errorf("local rank %d: peer %d: a GEMM signal seen at %v without overlap", me, p.LocalRank, p.Signal)
		case overlap && (p.Signal < p.Ready || p.Landed < p.Signal || p.Landed < p.Permit):
			return fmt.Errorf("local rank %d: peer %d: ready %v, signal %v, permit %v, landed %v out of order", me, p.LocalRank, p.Ready, p.Signal, p.Permit, p.Landed)
		case (i == 0 || !overlap) && p.Permit != 0, overlap && i > 0 && p.Permit == 0:
			return fmt.Errorf("local rank %d: peer %d (%d-th): permit seen at %v (overlap %v)", me, p.LocalRank, i, p.Permit, overlap)
		case overlap && i > 0 && p.Signal-st.Peers[i-1].Signal < gap/2:
			return fmt.Errorf("local rank %d: signals seen %v and %v apart, raised %v apart", me, st.Peers[i-1].Signal, p.Signal, gap)
		case st.Scatter < p.Landed || st.Total < st.IntraReduce:
			return fmt.Errorf("local rank %d: peer landed %v, scatter %v; reduce %v, call %v", me, p.Landed, st.Scatter, st.IntraReduce, st.Total)
		}
	}
	return nil
}

// Pacing: with GEMM overlap, a copy to the peer two or more places ahead
// waits until that peer has received the block of the sender one place
// behind it. Rank 0's producer holds its first block (for rank 1) back, so
// rank 3, whose second copy goes to rank 1, must not start it before rank
// 0's block landed there, although its own signal came long before.
func TestPacingHoldsTheNextSender(t *testing.T) {
	const hold = 150 * time.Millisecond
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
	require.NoError(t, err)
	defer w.Close()
	ws, rowsPer, n, dt := shape.World(), 2, 8, dtype.F32
	m := rowsPer * ws
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true, Timeout: 20 * time.Second}, ws)
		if err != nil {
			return err
		}
		defer tr.close()
		if err := r.Comm.Barrier(ctx); err != nil {
			return err
		}
		st, err := tr.call(ctx, func(sig rs2d.Signals) error {
			for i, dest := range tr.rs.ConsumptionOrder() {
				if rank == 0 && i == 0 {
					time.Sleep(hold)
				}
				if err := sig.Raise(tr.producer, dest); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if rank != 3 {
			return nil
		}
		second := st.Peers[1]
		switch {
		case second.LocalRank != 1:
			return fmt.Errorf("rank 3's second peer is %d, want 1", second.LocalRank)
		case second.Signal > hold/2:
			return fmt.Errorf("rank 3's signal for rank 1 seen at %v: its producer did not wait", second.Signal)
		case second.Permit < hold*3/4:
			return fmt.Errorf("rank 3's copy to rank 1 was free to start at %v (signal %v), before rank 0's held block (%v) could land",
				second.Permit, second.Signal, hold)
		}
		return nil
	})
	require.NoError(t, err)
}
