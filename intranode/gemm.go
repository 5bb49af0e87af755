package intranode

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/symm"
)

// GemmSignals are the words a GEMM producer raises when rows are complete,
// in this rank's pad (with GEMM overlap):
//   - gemm[dest, j] = epoch: segment j of the rows for destination rank
//     dest is complete (Segments segments per destination, one by default);
//   - early[dest] = epoch: the first EarlyRows rows of dest's block are.
//
// The context lays them out (NewGemmSignals) and binds them to its heap
// (Bind); engines that overlap with a GEMM wait on them.
type GemmSignals struct {
	place    symm.Place
	segments int
	split    bool
	pads     [2]symm.Pad       // gemm, early
	words    [2]symm.SignalPad // bound to the heap
}

// NewGemmSignals lays out in l the GEMM signals of a rank at place, with
// segments signals per destination (0 means 1); split: the first block in
// consumption order comes in two halves with the early signal between them
// (EarlyRows).
func NewGemmSignals(l *symm.Layout, place symm.Place, segments int, split bool) *GemmSignals {
	g := &GemmSignals{place: place, segments: max(1, segments), split: split}
	world := place.Shape.World()
	g.pads[0] = l.AddPad("gemm signals", world*g.segments)
	g.pads[1] = l.AddPad("early gemm signals", world)
	return g
}

// Bind labels the signals on heap, laid out with them, under proto.
func (g *GemmSignals) Bind(heap *symm.Heap, proto symm.Protocol) {
	segs := g.segments
	g.words[0] = heap.Signals(g.pads[0], proto, func(owner, i int) string {
		if segs > 1 {
			return fmt.Sprintf("GEMM signal of segment %d for rank %d on rank %d", i%segs, i/segs, owner)
		}
		return fmt.Sprintf("GEMM signal for rank %d on rank %d", i, owner)
	})
	g.words[1] = heap.Signals(g.pads[1], proto, func(owner, dest int) string {
		return fmt.Sprintf("early GEMM signal for rank %d on rank %d", dest, owner)
	})
}

// Segments is how many signals each destination's rows come in.
func (g *GemmSignals) Segments() int { return g.segments }

// SegmentRows is the row range [r0, r1) of segment j of a block of rows
// rows signalled in segments segments (empty for segments past the rows).
func SegmentRows(rows, segments, j int) (int, int) { return ChunkRows(rows, segments, j) }

// Signal is the word of segment j of the rows for destination rank dest.
func (g *GemmSignals) Signal(dest, j int) symm.Signal {
	return g.words[0].At(g.place.Rank, dest*g.segments+j)
}

// Early is the early word of destination rank dest.
func (g *GemmSignals) Early(dest int) symm.Signal { return g.words[1].At(g.place.Rank, dest) }

// EarlyRows is how many rows of the first block in consumption order come
// before its early signal, for calls of rowsPer rows per rank: half of them
// when split and the rank has node peers to send to, else 0.
func (g *GemmSignals) EarlyRows(rowsPer int) int {
	if !g.split || g.place.Shape.LocalSize < 2 {
		return 0
	}
	return rowsPer / 2
}

// WaitFirst makes s wait until the first segment of the rows of
// destination rank dest is complete (early: the first EarlyRows rows).
func (g *GemmSignals) WaitFirst(s device.Stream, dest int, epoch symm.Epoch, early bool) error {
	if early {
		return g.Early(dest).WaitLast(s, uint32(epoch))
	}
	return g.Signal(dest, 0).WaitLast(s, uint32(epoch))
}

// WaitBlock makes s wait until every segment of the rows of destination
// rank dest, rowsPer rows, is complete (the call's last wait on them).
func (g *GemmSignals) WaitBlock(s device.Stream, dest, rowsPer int, epoch symm.Epoch) error {
	for j := 0; j < g.segments; j++ {
		if r0, r1 := SegmentRows(rowsPer, g.segments, j); r1 <= r0 {
			break
		}
		if err := g.Signal(dest, j).WaitLast(s, uint32(epoch)); err != nil {
			return err
		}
	}
	return nil
}

// Clear enqueues on s the reset of every GEMM word (early ones too).
func (g *GemmSignals) Clear(s device.Stream) error {
	for dest := 0; dest < g.place.Shape.World(); dest++ {
		for _, sig := range []symm.Signal{g.Signal(dest, 0), g.Early(dest)} {
			if err := sig.Reset(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReleaseWaits writes values past epoch into every GEMM word of this rank
// (Engine.ReleaseWaits).
func (g *GemmSignals) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	for _, w := range g.words {
		if w.Words() == 0 {
			continue
		}
		if err := w.Release(s, uint32(epoch)); err != nil {
			return fmt.Errorf("intranode: %w", err)
		}
	}
	return nil
}
