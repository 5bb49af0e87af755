package ce

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// A node step of the copy engine: scatter on the copy stream, reduce on the
// reduction stream.
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
	e    *Engine
	s    device.Stream
	step intranode.Step
	seqs []uint32 // the arrival sequence numbers of the step's chunks
	// earlyRows, with overlap, splits the copy to the step's first peer:
	// its first earlyRows rows go as soon as the producer raises their
	// early signal, the rest after the block's own signal (0: no split).
	earlyRows int
	// helpPeer's rows from helpFrom on are pushed by the producer's SMs
	// (Help): not copied here, and its arrival waits for them (-1: none).
	helpPeer, helpFrom int
}

// scatter enqueues the copies of one node step on the copy stream s: each
// peer's rows, chunk by chunk, each chunk followed by its arrival signal.
// The first copy to a peer in a call (step.First) waits for the peer's
// ready flag; with GEMM overlap it also waits for the GEMM signal of the
// destination rank (and, in the first step of a split first block, the
// first peer's early rows go ahead after their early signal) and for its
// permit. It returns the arrival sequence numbers of the step's chunks, for
// reduce.
func (e *Engine) scatter(s device.Stream, step intranode.Step) ([]uint32, error) {
	sc := &scatter{e: e, s: s, step: step, seqs: make([]uint32, step.Chunks), helpPeer: -1}
	if step.First {
		if e.helpRows > 0 && e.helpEpoch == step.Epoch {
			sc.helpPeer, sc.helpFrom = e.helpedPeer(), step.RowsPer-e.helpRows
		}
		e.helpRows = 0 // a push enqueued for a call that never came is not this call's
		e.seq = e.env.Proto.Restart(e.seq)
		if e.overlap() {
			sc.earlyRows = e.env.Gemm.EarlyRows(step.RowsPer)
		}
	}
	for c := range sc.seqs {
		e.seq++
		sc.seqs[c] = e.seq
	}
	order := intranode.RankSwizzle(e.env.Place.LocalRank, e.lws())
	if e.overlap() {
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
	e, me, lws := sc.e, sc.e.env.Place.LocalRank, sc.e.lws()
	if peer == me {
		return nil // nothing is copied to self; reduce waits for the own GEMM signal
	}
	split := i == 0 && sc.earlyRows > 0
	if err := sc.gate(peer, split); err != nil {
		return err
	}
	last := sc.seqs[len(sc.seqs)-1]
	if i > 0 {
		permit := e.permits.At(e.env.Place.Rank, peer)
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
		if err := e.permits.At(e.env.Place.NodePeer(prev), peer).Raise(sc.s, last); err != nil {
			return fmt.Errorf("ce: permit to local rank %d: %w", prev, err)
		}
	}
	return sc.trace(peer, Landed)
}

// gate makes the copy stream wait until peer's rows may go: its ready flag
// (first step), the early part sent ahead (split), the GEMM signal
// (overlap).
func (sc *scatter) gate(peer int, split bool) error {
	e := sc.e
	if peer == e.env.Place.LocalRank {
		return nil // nothing is copied to self; reduce waits for the own GEMM signal
	}
	if sc.step.First {
		if err := e.ready.At(e.env.Place.Rank, peer).WaitLast(sc.s, uint32(sc.step.Epoch)); err != nil {
			return err
		}
		if err := sc.trace(peer, Ready); err != nil {
			return err
		}
	}
	if !e.overlap() {
		return nil
	}
	if split {
		if err := sc.early(peer); err != nil {
			return err
		}
	}
	if err := e.waitGemm(sc.s, sc.step, peer, false); err != nil {
		return err
	}
	return sc.trace(peer, Signal)
}

// copySegments copies peer's block of an overlapped step, chunk by chunk,
// and, when the producer signals in segments, each segment after its signal
// (the gate waited for the first); split: the early rows went ahead.
func (sc *scatter) copySegments(peer int, split bool) error {
	e := sc.e
	from := 0
	if split {
		from = sc.earlyRows
	}
	if segs := e.segments(); segs > 1 {
		dest := sc.step.Node*e.lws() + peer
		// Summed (the producer's epilogue waits for each segment): an
		// arrival per segment, raised for empty ones too (the reduction
		// stream waits for every chunk's).
		perSegment := sc.step.Summed && len(sc.seqs) == segs
		for j := 0; j < segs; j++ {
			r0, r1 := intranode.SegmentRows(sc.step.RowsPer, segs, j)
			if r1 > r0 {
				if j > 0 {
					if err := e.env.Gemm.Signal(dest, j).WaitLast(sc.s, uint32(sc.step.Epoch)); err != nil {
						return err
					}
				}
				if err := sc.copyRows(peer, max(r0, from), r1); err != nil {
					return err
				}
			} else if !perSegment {
				break
			}
			if perSegment {
				if err := sc.arrive(peer, j); err != nil {
					return err
				}
			}
		}
		if perSegment {
			return nil
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

// early copies the first sc.earlyRows rows of peer's block once the
// producer raised their early signal.
func (sc *scatter) early(peer int) error {
	if err := sc.e.waitGemm(sc.s, sc.step, peer, true); err != nil {
		return err
	}
	if err := sc.copyRows(peer, 0, min(sc.earlyRows, sc.step.RowsPer)); err != nil {
		return err
	}
	return sc.trace(peer, Early)
}

// copyChunk copies chunk c of peer's block from row from on (the rows
// before it went ahead) and signals its arrival.
func (sc *scatter) copyChunk(peer, c, from int) error {
	if peer == sc.e.env.Place.LocalRank {
		return nil // the reduce reads the own block from the input
	}
	r0, r1 := intranode.ChunkRows(sc.step.RowsPer, sc.step.Chunks, c)
	if err := sc.copyRows(peer, max(r0, from), r1); err != nil {
		return err
	}
	return sc.arrive(peer, c)
}

// arrive raises, in peer's pad, the arrival of this rank's chunk c (after
// the SMs' push of its last rows, when helped).
func (sc *scatter) arrive(peer, c int) error {
	e := sc.e
	if peer == sc.helpPeer && c == len(sc.seqs)-1 {
		if err := sc.s.WaitEvent(e.helped); err != nil {
			return err
		}
	}
	return e.arrived.At(e.env.Place.NodePeer(peer), e.env.Place.LocalRank).Raise(sc.s, sc.seqs[c])
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
	e := sc.e
	dst, src := e.blockRows(sc.step, peer, r0)
	if err := e.env.Dev.Copy(sc.s, dst, src, int64(r1-r0)*e.env.RowBytes()); err != nil {
		return fmt.Errorf("ce: scatter to local rank %d: %w", peer, err)
	}
	return nil
}

// trace records trace point at of peer's rows on the copy stream, when
// tracing.
func (sc *scatter) trace(peer int, at Point) error {
	if peer == sc.e.env.Place.LocalRank {
		return nil
	}
	return sc.e.trace.record(sc.s, peer, at)
}

// blockRows returns where row r of the block for node peer goes in its
// scatter buffer (dst) and where it is in this rank's input (src).
func (e *Engine) blockRows(step intranode.Step, peer, r int) (dst, src device.Ptr) {
	destRank := step.Node*e.lws() + peer
	src = step.Input.Add(int64(destRank*step.RowsPer+r) * e.env.RowBytes())
	dst = e.env.Heap.At(e.env.Place.NodePeer(peer), e.scatterBuf).Add(e.landingOffset(step, e.env.Place.LocalRank, r))
	return dst, src
}

// landingOffset is where, in a scatter buffer, row r of local rank k's
// block of step lands: the node step's rows, then each local rank's
// RowsPer of them in turn.
func (e *Engine) landingOffset(step intranode.Step, k, r int) int64 {
	return int64((step.Node*e.lws()+k)*step.RowsPer+r) * e.env.RowBytes()
}

// SumsOwnBlock reports whether, with GEMM overlap, the engine hands the sum
// of a rank's own block to the producer's GEMM (SumOf) on nodes nodes of
// lws ranks: one node of several ranks.
func SumsOwnBlock(nodes, lws int) bool { return nodes == 1 && lws >= 2 }

// summed reports whether step's own block is summed by the producer's
// GEMM (Call.Summed, the own node's step): its reduction is waits only.
func (e *Engine) summed(step intranode.Step) bool {
	return step.Summed && e.overlap() && step.Node == e.env.Place.Node
}

// SumOf describes the sum of this rank's own block of step (the own node's
// step of a call about to be enqueued, ReduceTo its output) for a producer
// that does it in its GEMM's epilogue (intranode.Sum; the call then goes
// with Call.Summed and Chunks the GEMM's segments), or false where this
// engine cannot hand it over (SumsOwnBlock): without GEMM overlap, on one
// rank or on more than one node (the own node's step is then not the
// call's last). No other call may come between it and the call.
func (e *Engine) SumOf(step intranode.Step) (intranode.Sum, bool) {
	if !e.overlap() || !SumsOwnBlock(e.env.Place.Shape.Nodes, e.lws()) {
		return intranode.Sum{}, false
	}
	lws, cols := e.lws(), int64(e.env.Cols)
	// Every segment but the last has segment 0's rows, as copySegments
	// copies and raises them.
	_, segRows := intranode.SegmentRows(step.RowsPer, e.segments(), 0)
	return intranode.Sum{
		Dst:         step.ReduceTo,
		Row0:        (step.Node*lws + e.env.Place.LocalRank) * step.RowsPer,
		Rows:        step.RowsPer,
		Blocks:      e.env.Heap.Local().Add(e.scatterBuf.Off + e.landingOffset(step, 0, 0)),
		Stride:      int64(step.RowsPer) * cols,
		Ranks:       lws,
		Self:        e.env.Place.LocalRank,
		Arrivals:    e.arrived.At(e.env.Place.Rank, 0).Addr(),
		Base:        e.env.Proto.Restart(e.seq),
		SegmentRows: segRows,
	}, true
}

// waitGemm makes s wait, with GEMM overlap, until the producer finished the
// first segment of the rows of step.Node's local rank peer (early: their
// first early rows).
func (e *Engine) waitGemm(s device.Stream, step intranode.Step, peer int, early bool) error {
	if !e.overlap() {
		return nil
	}
	return e.env.Gemm.WaitFirst(s, step.Node*e.lws()+peer, step.Epoch, early)
}

// waitBlock makes s wait, with GEMM overlap, until the producer finished
// every segment of the rows of step.Node's local rank peer (the call's last
// wait on those words).
func (e *Engine) waitBlock(s device.Stream, step intranode.Step, peer int) error {
	if !e.overlap() {
		return nil
	}
	return e.env.Gemm.WaitBlock(s, step.Node*e.lws()+peer, step.RowsPer, step.Epoch)
}

// reduce enqueues on r, for each chunk, a wait for the lws-1 peer blocks of
// the chunk (their arrivals, numbered seqs by scatter) and the reduce kernel
// that sums them and the own block (from the input) into step.ReduceTo. A
// summed step (the producer's GEMM sums the own block) has no kernel: its
// waits end the call only once the peers' blocks landed, and under the
// growing protocol they do not wait for the own block's GEMM signals,
// which the GEMM raises after its last sums (the call's stream waits for
// the GEMM itself); under the replayable protocol they do, since the last
// arrival waits reset the words the GEMM's sums read.
func (e *Engine) reduce(r device.Stream, step intranode.Step, seqs []uint32) error {
	lws, lr := e.lws(), e.env.Place.LocalRank
	rowBytes := e.env.RowBytes()
	local := e.env.Heap.Local()
	summed := e.summed(step)
	if !summed || e.env.Proto == symm.Replayable {
		if err := e.waitBlock(r, step, lr); err != nil {
			return err
		}
	}
	for c, seq := range seqs {
		last := step.Last && c == len(seqs)-1 // the call's last waits on these words
		for src := 0; src < lws; src++ {
			if src == lr {
				continue
			}
			arrival := e.arrived.At(e.env.Place.Rank, src)
			wait := arrival.Wait
			if last {
				wait = arrival.WaitLast
			}
			if err := wait(r, seq); err != nil {
				return err
			}
		}
		if last {
			if err := e.trace.recordReady(r); err != nil {
				return err
			}
		}
		r0, r1 := intranode.ChunkRows(step.RowsPer, step.Chunks, c)
		if r1 == r0 || summed {
			continue
		}
		blocks := kernels.Blocks{
			Src:     local.Add(e.scatterBuf.Off + e.landingOffset(step, 0, r0)),
			Stride:  int64(step.RowsPer) * int64(e.env.Cols),
			N:       lws,
			Count:   int64(r1-r0) * int64(e.env.Cols),
			Self:    lr,
			SelfSrc: step.Input.Add(int64((step.Node*lws+lr)*step.RowsPer+r0) * rowBytes),
		}
		dst := step.ReduceTo.Add(int64(r0) * rowBytes)
		if err := kernels.LaunchReduce(e.env.Dev, r, e.env.DType, e.reduceGrid(step), dst, blocks); err != nil {
			return fmt.Errorf("ce: reduce: %w", err)
		}
	}
	return nil
}
