package pull

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
)

// maxSets is the most staging sets (a lane's each and one more).
const maxSets = 3

// setBytes is one staging set of rounds of rows rows: a block for each
// destination on another GPU of the node, (world − nodes) blocks.
func (m *Maker) setBytes(rows int) int64 {
	shape := m.spec.Place.Shape
	return int64(shape.World()-shape.Nodes) * m.blockBytes(rows)
}

// blockBytes is one block of a staging set: rows rows.
func (m *Maker) blockBytes(rows int) int64 { return int64(rows) * m.spec.RowBytes() }

// setBlock is the block of a staging set on local rank owner that holds
// the rows for local rank lr (≠ owner) of node node: the set leaves out
// the owner's own blocks.
func (m *Maker) setBlock(node, lr, owner int) int64 {
	lws := m.spec.LocalSize()
	if lr > owner {
		lr--
	}
	return int64(node*(lws-1) + lr)
}

// Whole calls on nodes of more than two GPUs whose input is copied in go
// in rounds staged in the symmetric input where each destination's block
// is minInRoundsBlock to maxInRoundsBlock bytes, the staging sets taking
// inStagingBytes of it (or all of it, where it is smaller). On 4 H100s
// these rounds read faster than the whole copy then the pull and than the
// pieces at blocks of 32–128 MiB, slower than the pieces from 256 MiB; on
// 2 they were slower at 32, 64, 512 and 1024 MiB (RESULTS.md). Variables
// for the tests.
var (
	minInRoundsBlock int64 = 32 << 20
	maxInRoundsBlock int64 = 128 << 20
	inStagingBytes   int64 = 128 << 20
)

// staged reports whether call goes in rounds through staging sets: a call
// under a bound whose input is not registered, or a whole call copied in
// rounds.
func (e *Engine) staged(call intranode.Call) bool {
	return (e.m.rows > 0 && call.InputViews == 0) || e.inRounds(call)
}

// inRounds reports whether call is a whole call copied in rounds staged in
// the symmetric input: its input neither the symmetric input nor
// registered, its blocks from minInRoundsBlock to maxInRoundsBlock (on a
// node of more than two GPUs: NewMaker). Only sizes decide it, so every
// rank agrees (the peers read the staging sets' layout).
func (e *Engine) inRounds(call intranode.Call) bool {
	block := int64(call.RowsPer) * e.env.RowBytes()
	return e.m.inRows > 0 && e.copiedIn(call) && block >= minInRoundsBlock && block <= maxInRoundsBlock
}

// ownStaged reports whether a round's own rows, which a rank reads from its
// input in place, are copied into its output rows first and read there: on
// one node (the output rows are then the call's own, written by this
// round's kernel alone), where the input is not 16-byte aligned and the
// output is (the kernel would otherwise take its element path). This rank's
// choice alone: the peers read the staging sets either way.
func (e *Engine) ownStaged(step intranode.Step) bool {
	return e.env.Place.Shape.Nodes == 1 && !e.rowsAligned(step.Input) && e.rowsAligned(step.ReduceTo)
}

// copyInRounds is the node step of a whole call copied in rounds: the
// block cut into even rounds, each a roundStep through the staging sets in
// the symmetric input.
func (e *Engine) copyInRounds(s device.Stream, step intranode.Step) (intranode.Done, error) {
	st := e.inputStaging()
	var done intranode.Done
	r0 := 0
	for _, rows := range intranode.RoundRows(step.RowsPer, st.rows, false) {
		var err error
		if done, err = e.roundStep(s, e.part(step, r0, rows), st); err != nil {
			return intranode.Done{}, err
		}
		r0 += rows
	}
	return done, nil
}

// staging is where a call's rounds are staged: this rank's sets (local),
// the device table of the node peers' sets as mapped here, shifted to their
// blocks for this rank, and the rows of a block.
type staging struct {
	local, table device.Ptr
	rows         int
}

// heapStaging is the staging of a call under a bound: sets in the heap.
func (e *Engine) heapStaging() staging {
	local := e.env.Heap.Local()
	return staging{local.Add(e.m.staging.Off), local.Add(e.m.roundsTable.Off), e.m.rows}
}

// inputStaging is the staging of a whole call copied in rounds: sets in
// the symmetric input.
func (e *Engine) inputStaging() staging {
	return staging{e.sym(), e.env.Heap.Local().Add(e.m.inputRounds.Off), e.m.inRows}
}

// roundStep is a node step of a call in rounds staged in st. A round's
// first node step (the node after this rank's, in node swizzle) copies the
// round's rows of every node peer destination's block into staging set
// round%sets, once the pull that last read that set ended; its kernels
// wait for every peer's copy (arrive) in the first step and, in the
// round's last (the own node), end once every peer read this rank's set
// (done). The round's launches go on its lane's stream (round%lanes: 0 is
// s, 1 the reduction stream), which End joins back into s.
func (e *Engine) roundStep(s device.Stream, step intranode.Step, st staging) (intranode.Done, error) {
	nodes, place := e.env.Place.Shape.Nodes, e.env.Place
	first, last := step.Node == (place.Node+1)%nodes, step.Node == place.Node
	set, lane := e.round%e.m.sets, e.round%e.m.lanes
	if lane == 1 {
		s = e.env.Streams.Reduction
	}
	if step.Rows > st.rows {
		return intranode.Done{}, fmt.Errorf("pull: a round of %d rows, at most %d: %w", step.Rows, st.rows, device.ErrInvalidArgument)
	}
	base := int64(set) * e.m.setBytes(st.rows)
	own, stageOwn := e.ownIn(step), first && e.ownStaged(step)
	if stageOwn {
		own = step.ReduceTo
	}
	if first {
		if err := e.stage(s, step, set, st.local.Add(base), st.rows, stageOwn); err != nil {
			return intranode.Done{}, err
		}
	}
	off := base + int64(step.Node*(e.env.LocalSize()-1))*e.m.blockBytes(st.rows) // the node's first block; the table adds this rank's
	done, err := e.pull(s, lane, step, st.table, off, own, first, last)
	if first {
		done.Staged = e.env.Streams.Copy[0]
	}
	if err != nil || !last {
		return done, err
	}
	e.round++
	return done, e.read[set].Record(s)
}

// stage copies step's rows of every node peer destination's block into
// staging set set (at local, blocks of rows rows) on the copy stream,
// after the pull that last read the set, and the own rows into the step's
// output where own (ownStaged), and has s wait for the copies.
func (e *Engine) stage(s device.Stream, step intranode.Step, set int, local device.Ptr, rows int, own bool) error {
	cp, rowBytes := e.env.Streams.Copy[0], e.env.RowBytes()
	if e.round >= e.m.sets {
		if err := cp.WaitEvent(e.read[set]); err != nil {
			return err
		}
	}
	lws, me := e.env.LocalSize(), e.env.Place.LocalRank
	for g := 0; g < e.env.Place.Shape.World(); g++ {
		if g%lws == me {
			continue // read from the input itself
		}
		src := step.Input.Add(int64(g*step.RowsPer+step.Row0) * rowBytes)
		dst := local.Add(e.m.setBlock(g/lws, g%lws, me) * e.m.blockBytes(rows))
		if err := e.env.Dev.Copy(cp, dst, src, int64(step.Rows)*rowBytes); err != nil {
			return fmt.Errorf("pull: staging round %d: %w", e.round, err)
		}
	}
	if own {
		if err := e.env.Dev.Copy(cp, step.ReduceTo, e.ownIn(step), int64(step.Rows)*rowBytes); err != nil {
			return fmt.Errorf("pull: staging round %d's own rows: %w", e.round, err)
		}
	}
	if err := e.copied[set].Record(cp); err != nil {
		return err
	}
	return s.WaitEvent(e.copied[set])
}
