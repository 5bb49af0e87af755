package intranode

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/kernels"
)

// The copy engine: Scatter on the copy stream, Reduce on the reduction
// stream.
//
// Pacing. The ring order keeps each GPU receiving from one peer at a time
// only while the ranks move in step; when they drift apart (a copy waited
// for its GEMM block), two peers may send to one GPU at once, which costs
// the copy engine a third of its rate. With GEMM overlap a rank's copy to
// the peer i+1 places ahead therefore also waits for a permit from the rank
// one place after it, which sends to that peer one step earlier and writes
// the permit right after that copy: each GPU receives one block at a time.
//
// The node step's rows are split into chunks so that the reduction of chunk
// c overlaps the scatter of chunk c+1 (one chunk with GEMM overlap: the
// scatter goes peer by peer as the producer raises the signals).

// scatter is one node step's copies on one copy stream.
type scatter struct {
	st    *Stage
	s     device.Stream
	step  Step
	seqs  []uint32 // the arrival sequence numbers of the step's chunks
	first bool     // the call's first node step: wait for the peers' ready flags
	// helpPeer's rows from helpFrom on are pushed by the producer's SMs
	// (Help): not copied here, and its arrival waits for them (-1: none).
	helpPeer, helpFrom int
}

// Scatter enqueues the copies of one node step on the copy stream s: each
// peer's rows, chunk by chunk, each chunk followed by its arrival signal.
// The first copy to a peer in a call (first) waits for the peer's ready
// flag; with GEMM overlap it also waits for the GEMM signal of the
// destination rank (and, with step.EarlyRows, the first peer's early rows go
// ahead after their early signal) and for its permit. It returns the
// arrival sequence numbers of the step's chunks, for Reduce.
func (st *Stage) Scatter(s device.Stream, step Step, first bool) ([]uint32, error) {
	sc := &scatter{st: st, s: s, step: step, first: first, seqs: make([]uint32, step.Chunks), helpPeer: -1}
	if first {
		if st.helpRows > 0 && st.helpEpoch == step.Epoch {
			sc.helpPeer, sc.helpFrom = st.helpedPeer(), step.RowsPer-st.helpRows
		}
		st.helpRows = 0 // a push enqueued for a call that never came is not this call's
		st.seq = st.proto.Restart(st.seq)
	}
	for c := range sc.seqs {
		st.seq++
		sc.seqs[c] = st.seq
	}
	order := RankSwizzle(st.place.LocalRank, st.lws())
	if st.overlap {
		// Peer by peer, in the order the producer raises the signals.
		for i, peer := range order {
			if err := sc.pacedPeer(i, peer); err != nil {
				return nil, err
			}
		}
		return sc.seqs, nil
	}
	// Chunk by chunk, so the reduction of a chunk can start while the next
	// is in flight.
	for _, peer := range order {
		if err := sc.gate(peer, false); err != nil {
			return nil, err
		}
	}
	for c := 0; c < step.Chunks; c++ {
		for _, peer := range order {
			if err := sc.copyChunk(peer, c, 0); err != nil {
				return nil, err
			}
		}
	}
	for _, peer := range order {
		if err := sc.trace(peer, Landed); err != nil {
			return nil, err
		}
	}
	return sc.seqs, nil
}

// pacedPeer enqueues the copies to peer, the i-th in rank-swizzle order, of
// an overlapped step: after its gates and its permit; then the permit this
// rank gives to the rank one place before it.
func (sc *scatter) pacedPeer(i, peer int) error {
	st, me, lws := sc.st, sc.st.place.LocalRank, sc.st.lws()
	if peer == me {
		return nil // nothing is copied to self; Reduce waits for the own GEMM signal
	}
	split := i == 0 && sc.step.EarlyRows > 0
	if err := sc.gate(peer, split); err != nil {
		return err
	}
	last := sc.seqs[len(sc.seqs)-1]
	if i > 0 {
		permit := st.permits.At(st.place.Rank, peer)
		wait := permit.Wait
		if sc.step.Last {
			wait = permit.WaitLast
		}
		if err := wait(sc.s, last); err != nil {
			return err
		}
		if err := sc.trace(peer, Permit); err != nil {
			return err
		}
	}
	if err := sc.copySegments(peer, split); err != nil {
		return err
	}
	if i < lws-2 { // the rank one place before sends to peer next
		prev := (me - 1 + lws) % lws
		if err := st.permits.At(st.place.NodePeer(prev), peer).Raise(sc.s, last); err != nil {
			return fmt.Errorf("intranode: permit to local rank %d: %w", prev, err)
		}
	}
	return sc.trace(peer, Landed)
}

// gate makes the copy stream wait until peer's rows may go: its ready flag
// (first step), the early part sent ahead (split), the GEMM signal
// (overlap).
func (sc *scatter) gate(peer int, split bool) error {
	st := sc.st
	if peer == st.place.LocalRank {
		return nil // nothing is copied to self; Reduce waits for the own GEMM signal
	}
	if sc.first {
		if err := st.ready.At(st.place.Rank, peer).WaitLast(sc.s, uint32(sc.step.Epoch)); err != nil {
			return err
		}
		if err := sc.trace(peer, Ready); err != nil {
			return err
		}
	}
	if !st.overlap {
		return nil
	}
	if split {
		if err := sc.early(peer); err != nil {
			return err
		}
	}
	if err := st.waitGemm(sc.s, sc.step, peer, false); err != nil {
		return err
	}
	return sc.trace(peer, Signal)
}

// copySegments copies peer's block of an overlapped step, chunk by chunk,
// and, when the producer signals in segments, each segment after its signal
// (the gate waited for the first); split: the early rows went ahead.
func (sc *scatter) copySegments(peer int, split bool) error {
	st := sc.st
	from := 0
	if split {
		from = sc.step.EarlyRows
	}
	if segs := st.Segments(); segs > 1 {
		dest := sc.step.Node*st.lws() + peer
		for j := 0; j < segs; j++ {
			r0, r1 := SegmentRows(sc.step.RowsPer, segs, j)
			if r1 <= r0 {
				break
			}
			if j > 0 {
				if err := st.GemmSignal(dest, j).WaitLast(sc.s, uint32(sc.step.Epoch)); err != nil {
					return err
				}
			}
			if err := sc.copyRows(peer, max(r0, from), r1); err != nil {
				return err
			}
		}
		return sc.arrive(peer, len(sc.seqs)-1)
	}
	for c := 0; c < sc.step.Chunks; c++ {
		if err := sc.copyChunk(peer, c, from); err != nil {
			return err
		}
	}
	return nil
}

// early copies the first step.EarlyRows rows of peer's block once the
// producer raised their early signal.
func (sc *scatter) early(peer int) error {
	if err := sc.st.waitGemm(sc.s, sc.step, peer, true); err != nil {
		return err
	}
	if err := sc.copyRows(peer, 0, min(sc.step.EarlyRows, sc.step.RowsPer)); err != nil {
		return err
	}
	return sc.trace(peer, Early)
}

// copyChunk copies chunk c of peer's block from row from on (the rows
// before it went ahead) and signals its arrival.
func (sc *scatter) copyChunk(peer, c, from int) error {
	if peer == sc.st.place.LocalRank {
		return nil // the reduce reads the own block from the input
	}
	r0, r1 := chunkRows(sc.step.RowsPer, sc.step.Chunks, c)
	if err := sc.copyRows(peer, max(r0, from), r1); err != nil {
		return err
	}
	return sc.arrive(peer, c)
}

// arrive raises, in peer's pad, the arrival of this rank's chunk c (after
// the SMs' push of its last rows, when helped).
func (sc *scatter) arrive(peer, c int) error {
	st := sc.st
	if peer == sc.helpPeer && c == len(sc.seqs)-1 {
		if err := sc.s.WaitEvent(st.helped); err != nil {
			return err
		}
	}
	return st.arrived.At(st.place.NodePeer(peer), st.place.LocalRank).Raise(sc.s, sc.seqs[c])
}

// copyRows enqueues the copy of rows [r0, r1) of peer's block into its
// scatter buffer.
func (sc *scatter) copyRows(peer, r0, r1 int) error {
	if peer == sc.helpPeer {
		r1 = min(r1, sc.helpFrom)
	}
	if r1 <= r0 {
		return nil
	}
	st := sc.st
	dst, src := st.blockRows(sc.step, peer, r0)
	if err := st.dev.Copy(sc.s, dst, src, int64(r1-r0)*st.rowBytes()); err != nil {
		return fmt.Errorf("intranode: scatter to local rank %d: %w", peer, err)
	}
	return nil
}

// trace records trace point at of peer's rows on the copy stream, when
// tracing.
func (sc *scatter) trace(peer int, at Point) error {
	if peer == sc.st.place.LocalRank {
		return nil
	}
	return sc.st.trace.record(sc.s, peer, at)
}

// waitGemm makes s wait, with GEMM overlap, until the producer finished the
// first segment of the rows of step.Node's local rank peer (early: their
// first step.EarlyRows; all: every segment).
func (st *Stage) waitGemm(s device.Stream, step Step, peer int, early bool) error {
	if !st.overlap {
		return nil
	}
	dest := step.Node*st.lws() + peer
	if early {
		return st.EarlySignal(dest).WaitLast(s, uint32(step.Epoch))
	}
	return st.GemmSignal(dest, 0).WaitLast(s, uint32(step.Epoch))
}

// WaitBlock makes s wait, with GEMM overlap, until the producer finished
// every segment of the rows of step.Node's local rank peer (the call's last
// wait on those words).
func (st *Stage) WaitBlock(s device.Stream, step Step, peer int) error {
	if !st.overlap {
		return nil
	}
	dest := step.Node*st.lws() + peer
	for j := 0; j < st.Segments(); j++ {
		if r0, r1 := SegmentRows(step.RowsPer, st.Segments(), j); r1 <= r0 {
			break
		}
		if err := st.GemmSignal(dest, j).WaitLast(s, uint32(step.Epoch)); err != nil {
			return err
		}
	}
	return nil
}

// Reduce enqueues on r, for each chunk, a wait for the lws-1 peer blocks of
// the chunk (their arrivals, numbered seqs by Scatter) and the reduce kernel
// that sums them and the own block (from the input) into step.ReduceTo.
func (st *Stage) Reduce(r device.Stream, step Step, seqs []uint32) error {
	lws, lr := st.lws(), st.place.LocalRank
	rowBytes := st.rowBytes()
	rowsPerNode := step.RowsPer * lws
	local := st.heap.Local()
	if err := st.WaitBlock(r, step, lr); err != nil {
		return err
	}
	for c, seq := range seqs {
		for src := 0; src < lws; src++ {
			if src == lr {
				continue
			}
			arrival := st.arrived.At(st.place.Rank, src)
			wait := arrival.Wait
			if step.Last && c == len(seqs)-1 {
				wait = arrival.WaitLast
			}
			if err := wait(r, seq); err != nil {
				return err
			}
		}
		r0, r1 := chunkRows(step.RowsPer, step.Chunks, c)
		if r1 == r0 {
			continue
		}
		blocks := kernels.Blocks{
			Src:     local.Add(st.buf.ScatterBuf.Off + int64(step.Node*rowsPerNode+r0)*rowBytes),
			Stride:  int64(step.RowsPer) * int64(st.n),
			N:       lws,
			Count:   int64(r1-r0) * int64(st.n),
			Self:    lr,
			SelfSrc: step.Input.Add(int64((step.Node*lws+lr)*step.RowsPer+r0) * rowBytes),
		}
		dst := step.ReduceTo.Add(int64(r0) * rowBytes)
		if err := kernels.LaunchReduce(st.dev, r, st.dt, step.Grid, dst, blocks); err != nil {
			return fmt.Errorf("intranode: reduce: %w", err)
		}
	}
	return nil
}
