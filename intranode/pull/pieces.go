package pull

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
)

// Whole calls on one node whose input is copied in go in pieces where each
// destination's block is at least minPieceBlock bytes: pieces of at least
// minPieceBytes of each block, at most maxPieces, each piece's copy on the
// copy stream overlapping the previous piece's pull. Smaller blocks go
// whole: on 4 H200s pieces of 8 MiB of 32 MiB blocks measured slower than
// one copy (benchmarks/RESULTS.md). The first piece's copy, which no pull
// hides, goes by the copy engine (the fastest local copy); the later ones
// by SM copies on pieceCopySMs SMs, beside the pulls: with the copy
// engine's copies running back to back beside them the pulls took longer
// (on 2 and 4 H200s; 8 SMs fell behind the pulls at 512 MiB on 4).
const maxPieces, pieceCopySMs = 8, 16

// Variables for the tests' small pieces.
var minPieceBlock, minPieceBytes int64 = 128 << 20, 16 << 20

// pieces is how many pieces call's copy-in and pull go in: 1 but for a
// whole call on one node whose input is neither the symmetric input nor
// registered, and that does not go in rounds.
func (e *Engine) pieces(call intranode.Call) int {
	if e.m.rows > 0 || e.env.Place.Shape.Nodes > 1 || !e.copiedIn(call) || e.inRounds(call) {
		return 1
	}
	block := int64(call.RowsPer) * e.env.RowBytes()
	if block < minPieceBlock {
		return 1
	}
	return int(max(1, min(int64(maxPieces), block/minPieceBytes, int64(call.RowsPer))))
}

// pieceSteps is the node step of a whole call on one node copied in
// pieces: per piece, its rows of every destination's block (but the own
// one where it is read in place) are copied into the symmetric input on
// the copy stream and pulled once every peer copied its own (each launch
// makes the arrival handshake; the last, the reads-done one too).
func (e *Engine) pieceSteps(s device.Stream, step intranode.Step) (intranode.Done, error) {
	n, rowBytes := e.pieces(step.Call), e.env.RowBytes()
	per := (step.RowsPer + n - 1) / n
	cp := e.env.Streams.Copy[0]
	var done intranode.Done
	for r0 := 0; r0 < step.RowsPer; r0 += per {
		rows := min(per, step.RowsPer-r0)
		sms := pieceCopySMs
		if r0 == 0 {
			sms = 0
		}
		if err := e.copyIn(cp, step.Call, r0, rows, sms); err != nil {
			return intranode.Done{}, fmt.Errorf("pull: copying rows %d.. of the input in: %w", r0, err)
		}
		if err := e.copied[0].Record(cp); err != nil {
			return intranode.Done{}, err
		}
		if err := s.WaitEvent(e.copied[0]); err != nil {
			return intranode.Done{}, err
		}
		piece := e.part(step, r0, rows)
		off := int64(e.env.Place.LocalRank*step.RowsPer+r0) * rowBytes
		var err error
		if done, err = e.pull(s, 0, piece, e.inputs(), off, e.ownRows(piece), true, r0+rows >= step.RowsPer); err != nil {
			return intranode.Done{}, err
		}
	}
	return done, nil
}
