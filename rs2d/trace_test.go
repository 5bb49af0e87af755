package rs2d_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
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
	const gap = 100 * time.Millisecond // wide: the check compares spacings with half of it, on a loaded machine too
	for _, overlap := range []bool{false, true} {
		t.Run(fmt.Sprintf("overlap=%v", overlap), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
			w := simWorld(t, shape)
			ws, rowsPer, n, dt := shape.World(), 3, 16, dtype.F32
			m := rowsPer * ws
			ctx := testContext(t)
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineCopy,
					OverlapWithGEMM: overlap, Timeout: 2 * time.Minute}, ws)
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
	// The reduce starts after its waits (for the peers' copies to this
	// rank, not traced here); with overlap the producer raises the own
	// block's signal gap after the last peer's.
	last := st.Peers[len(st.Peers)-1]
	switch {
	case st.ReduceReady <= 0 || st.IntraReduce < st.ReduceReady:
		return fmt.Errorf("local rank %d: the reduce passed its waits at %v and ended at %v", me, st.ReduceReady, st.IntraReduce)
	case overlap && st.ReduceReady-last.Signal < gap/2:
		return fmt.Errorf("local rank %d: the reduce passed its waits at %v, %v after the last peer's signal: not after the own block's", me, st.ReduceReady, st.ReduceReady-last.Signal)
	}
	return nil
}

// Pacing: with GEMM overlap, a copy to the peer two or more places ahead
// waits until that peer has received the block of the sender one place
// behind it. Rank 0's producer holds its first block (for rank 1) back, so
// rank 3, whose second copy goes to rank 1, must not start it before rank
// 0's block landed there, although its own signal came long before.
func TestPacingHoldsTheNextSender(t *testing.T) {
	const hold = 400 * time.Millisecond // wide: the checks compare times with fractions of it, on a loaded machine too
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w := simWorld(t, shape)
	ws, rowsPer, n, dt := shape.World(), 2, 8, dtype.F32
	m := rowsPer * ws
	ctx := testContext(t)
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true, Timeout: 2 * time.Minute}, ws)
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

// SplitFirstBlock: the first half of the first block in consumption order
// goes on its early signal, the rest only on the block's signal. Each
// producer writes that block's first half, raises the early signal, holds
// the rest back, then writes it and raises the block's signal (the others
// come ready). The input starts as poison, so a half copied before its
// signal shows in the result, checked bit for bit (int32) against the sum;
// the trace shows the early half landed while the producer held the rest.
func TestEarlyRowsGoAheadOfTheBlock(t *testing.T) {
	const hold = 400 * time.Millisecond // wide: the checks compare times with fractions of it, on a loaded machine too
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w := simWorld(t, shape)
	ws, rowsPer, n, dt := shape.World(), 6, 8, dtype.I32
	m := rowsPer * ws
	rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
	inputs := make([][]byte, ws)
	for r := range inputs {
		inputs[r] = check.Random(rng, dt, m*n)
	}
	ctx := testContext(t)
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true,
			Timeout: 2 * time.Minute, Tuning: rs2d.Tuning{SplitFirstBlock: true}}, ws)
		if err != nil {
			return err
		}
		defer tr.close()
		if err := r.Dev.CopyToDevice(tr.in.Ptr, check.Poison(dt, m*n)); err != nil {
			return err
		}
		if err := r.Dev.CopyToDevice(tr.out.Ptr, check.Poison(dt, rowsPer*n)); err != nil {
			return err
		}
		rowBytes := n * dt.Size()
		write := func(dest, r0, r1 int) error {
			off := (dest*rowsPer + r0) * rowBytes
			return r.Dev.CopyToDevice(tr.in.Ptr.Add(int64(off)), inputs[rank][off:(dest*rowsPer+r1)*rowBytes])
		}
		order := tr.rs.ConsumptionOrder()
		st, err := tr.call(ctx, func(sig rs2d.Signals) error {
			half := sig.EarlyRows(m)
			if half != rowsPer/2 {
				return fmt.Errorf("EarlyRows(%d) = %d, want %d", m, half, rowsPer/2)
			}
			if err := write(order[0], 0, half); err != nil {
				return err
			}
			if err := sig.RaiseEarly(tr.producer, order[0]); err != nil {
				return err
			}
			time.Sleep(hold)
			if err := write(order[0], half, rowsPer); err != nil {
				return err
			}
			for _, dest := range order[1:] {
				if err := write(dest, 0, rowsPer); err != nil {
					return err
				}
			}
			for _, dest := range order {
				if err := sig.Raise(tr.producer, dest); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		got := make([]byte, rowsPer*rowBytes)
		if err := r.Dev.CopyToHost(got, tr.out.Ptr); err != nil {
			return err
		}
		if rep := check.ReduceScatter(dt, inputs, rank, rowsPer, n).Compare(got, 0); !rep.OK() {
			return fmt.Errorf("rank %d: %v", rank, rep)
		}
		first := st.Peers[0]
		switch {
		case first.Early <= 0:
			return fmt.Errorf("rank %d: the first peer's early rows never traced: %+v", rank, first)
		case first.Signal-first.Early < hold/2:
			return fmt.Errorf("rank %d: early rows landed at %v, the block's signal seen at %v: not ahead of the held rest", rank, first.Early, first.Signal)
		}
		for _, p := range st.Peers[1:] {
			if p.Early != 0 {
				return fmt.Errorf("rank %d: peer %d traced an early part: only the first block has one", rank, p.LocalRank)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// Help: the producer's stream pushes the last rows of the block for the last
// peer in scatter order after its GEMM, and the copy engine sends only the
// rows before them. The test's producer holds its stream back before the
// push; the last peer's arrival (traced as landed) must wait for it, and
// every output must still be the exact sum (int32), with and without
// segments, for part of the block and for all of it. A push the arrival
// did not wait for would leave the receiver reducing stale rows.
func TestHelpPushesTheLastRows(t *testing.T) {
	const hold = 400 * time.Millisecond // wide: the checks compare times with fractions of it, on a loaded machine too
	for _, tc := range []struct{ segments, rows int }{{0, 4}, {2, 3}, {0, 6}, {3, 6}} {
		t.Run(fmt.Sprintf("segments%d/rows%d", tc.segments, tc.rows), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
			w := simWorld(t, shape)
			ws, rowsPer, n, dt := shape.World(), 6, 8, dtype.I32
			m := rowsPer * ws
			const calls = 2
			inputs := callInputs(dt, calls, ws, m*n)
			ctx := testContext(t)
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				rank := r.Comm.Rank()
				tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true,
					Timeout: 2 * time.Minute, Tuning: rs2d.Tuning{Segments: tc.segments}}, ws)
				if err != nil {
					return err
				}
				defer tr.close()
				if !tr.rs.Helps() {
					return fmt.Errorf("an overlapped context on one node does not help")
				}
				gate, err := r.Dev.Alloc(4)
				if err != nil {
					return err
				}
				defer r.Dev.Free(gate)
				if err := r.Dev.CopyToDevice(gate, make([]byte, 4)); err != nil {
					return err
				}
				rel, err := r.Dev.NewStream(device.Normal) // writes the gate
				if err != nil {
					return err
				}
				defer rel.Close()
				got := make([]byte, rowsPer*n*dt.Size())
				for call := 0; call < calls; call++ {
					if err := r.Dev.CopyToDevice(tr.in.Ptr, inputs[call][rank]); err != nil {
						return err
					}
					if err := r.Dev.CopyToDevice(tr.out.Ptr, check.Poison(dt, rowsPer*n)); err != nil {
						return err
					}
					k, err := tr.rs.Prepare(tr.in, tr.out)
					if err != nil {
						return err
					}
					sig := k.Signals()
					for dest := 0; dest < ws; dest++ {
						for j := 0; j < sig.Segments(); j++ {
							if r0, r1 := sig.SegmentRows(m, j); r1 > r0 {
								if err := sig.RaiseSegment(tr.producer, dest, j); err != nil {
									return err
								}
							}
						}
					}
					// The producer's stream waits for the host before the push.
					if err := r.Dev.WaitValue32(tr.producer, device.Word{Addr: gate, Label: "test gate"}, device.GEQ, uint32(call+1)); err != nil {
						return err
					}
					if err := k.Help(tr.producer, tc.rows); err != nil {
						return err
					}
					if err := k.Enqueue(ctx, tr.s); err != nil {
						return err
					}
					time.Sleep(hold)
					if err := r.Dev.WriteValue32(rel, gate, uint32(call+1)); err != nil {
						return err
					}
					if err := tr.s.Synchronize(ctx); err != nil {
						return err
					}
					if err := r.Dev.CopyToHost(got, tr.out.Ptr); err != nil {
						return err
					}
					if rep := check.ReduceScatter(dt, inputs[call], rank, rowsPer, n).Compare(got, 0); !rep.OK() {
						return fmt.Errorf("rank %d, call %d: %v", rank, call, rep)
					}
					st, err := tr.rs.LastStages()
					if err != nil {
						return err
					}
					last := st.Peers[len(st.Peers)-1]
					if last.Landed < hold*2/3 {
						return fmt.Errorf("rank %d, call %d: the last peer's block landed at %v, before the held push", rank, call, last.Landed)
					}
					for _, p := range st.Peers[:len(st.Peers)-1] {
						if p.Landed >= hold*2/3 {
							return fmt.Errorf("rank %d, call %d: peer %d's block, not pushed, landed only at %v", rank, call, p.LocalRank, p.Landed)
						}
					}
				}
				return tr.producer.Synchronize(ctx)
			})
			require.NoError(t, err)
		})
	}
}

// A traced call in rounds (the pull engine under a bound) reports when each
// round ended, one time per round, within the call (not necessarily in
// order: on one node the rounds' launches alternate between two streams),
// and when each round's staging copy ended, before its round; a call in
// one round reports none.
func TestTraceRounds(t *testing.T) {
	// Rows of 4 KiB, bounds for rounds of a few rows: on 1×4 three staging
	// sets of 3 blocks, on 2×2 two of 2 blocks and the rail's sets.
	for _, c := range []struct {
		shape bootstrap.Shape
		bound int64
	}{{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 2*3*4*4096 + 16<<10}, {bootstrap.Shape{Nodes: 2, LocalSize: 2}, 4*(2*2+4*2)*4096 + 32<<10}} {
		t.Run(fmt.Sprint(c.shape), func(t *testing.T) { traceRounds(t, c.shape, c.bound) })
	}
}

func traceRounds(t *testing.T, shape bootstrap.Shape, bound int64) {
	w := simWorld(t, shape)
	ws, rowsPer, n, dt := shape.World(), 12, 1024, dtype.F32
	m := rowsPer * ws
	ctx := testContext(t)
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		for _, b := range []int64{bound, 0} {
			tr, err := newTracedRank(ctx, t, r, rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EnginePull,
				MaxSymmetricBytes: b, Timeout: 2 * time.Minute}, ws)
			if err != nil {
				return err
			}
			st, err := tr.call(ctx, nil)
			pr := tr.rs.Memory().PullRows
			tr.close()
			if err != nil {
				return err
			}
			want := 0
			if pr > 0 {
				want = (rowsPer + pr - 1) / pr
			}
			if b > 0 && want < 3 {
				return fmt.Errorf("bound %d: %d rows per round of %d, want 3 rounds or more", b, pr, rowsPer)
			}
			if len(st.Rounds) != want {
				return fmt.Errorf("bound %d: %d round ends traced (%v), want %d", b, len(st.Rounds), st.Rounds, want)
			}
			for _, at := range st.Rounds {
				if at <= 0 || at > st.Total {
					return fmt.Errorf("bound %d: round ends %v, the call's end %v", b, st.Rounds, st.Total)
				}
			}
			// Each round's rows are staged (an unregistered input) before
			// its pull reads them.
			if len(st.Staged) != want {
				return fmt.Errorf("bound %d: %d staging copies traced (%v), want %d", b, len(st.Staged), st.Staged, want)
			}
			for i, at := range st.Staged {
				if at <= 0 || at > st.Rounds[i] {
					return fmt.Errorf("bound %d: staging copies ended at %v, the rounds at %v", b, st.Staged, st.Rounds)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
}
