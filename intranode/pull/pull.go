// Package pull is the pull-reduce engine: a node step of ReduceScatter2D as
// one kernel in which each rank reads its own row block from every node
// peer's symmetric input, sums it in fp32 (int32 exact) and writes its output
// once. Nothing is pushed to a peer and there is no scatter buffer to read
// back, so each byte crosses NVLink once and no second pass follows.
//
// The rows must lie in the context's symmetric input (intranode.Env.Input,
// the same offset on every rank): a caller writes them there itself (zero
// copy), or registers its buffer (intranode.Call.InputViews: the peers read
// it in place), or they are copied in first: the blocks the peers read,
// this rank's own staying in the caller's input where that pays
// (ownInPlace); a large whole call on one node in rounds staged in the
// symmetric input (below) or in pieces, each piece's copy on the copy
// stream (the first by the copy engine, the others by SM copies)
// overlapping the previous piece's pull. Two handshakes
// inside the kernel guard the input (pull.cu): a rank reads a peer's input
// only after the peer's launch started, and a call's last launch ends only
// after every peer finished reading this rank's input, so whatever follows
// it on the stream may overwrite it.
//
//	rank r of node, step cur:  out = Σ_q input_q[rows of (cur, r)]   q = 0..lws-1
//
// Under a memory bound the call goes in rounds of a few rows of every
// destination's block (NewMaker's rows; rs2d's loop hands them out as
// Step.Row0, Step.Rows): each round's rows for the node peers are copied
// from the caller's input into one of the staging sets, a block of rows rows
// per peer destination (world − nodes), on the copy stream, while the peers
// read the sets of the rounds before; a copy into a set waits until the pull
// that last read it ended, i.e. until every peer read it. A rank reads its
// own rows from the caller's input. On one node the rounds' launches
// alternate between two lanes (the caller's stream and the reduction stream,
// each with its own flags and call state), so that a round's launch, arrival
// and first loads overlap the previous round's last loads and reads-done
// handshake. There is a set for each lane and one more, so that the next
// round's copy waits for neither of the two pulls that may run at once. The
// memory is then sets × (world − nodes) × rows rows, whatever M.
//
// A whole call of mid-sized blocks on a node of more than two GPUs whose
// input is copied in goes in the same rounds, its staging sets in the
// symmetric input (which it would otherwise be copied into whole): each
// round's copy on the copy stream overlaps the pulls of the rounds before,
// where a whole copy would come first.
//
// Small whole calls go in one shot instead (oneshot.go): each rank pushes
// its rows into its peers' landing slots and sums what lands in its own,
// reading its input only itself; no copy in, no reads-done handshake.
// Blocks from bulkMinBytes are read with bulk copies, and every round of a
// call whose blocks reach bulkRoundsMinBlock (kernel.go).
//
// Large whole calls of a registered input or of the symmetric input on one
// node of two GPUs go through the copy engine instead (cepull.go): each
// rank's copy engine reads its block from the peer in chunks into landing
// slots, and the reduction stream sums each chunk with the own rows as it
// lands.
//
// Large whole calls on one node of more than two GPUs go around the ring
// instead (ring.go, on intranode/ring): SM stores to the next rank, each
// rank adding its own rows, its input read where it lies.
//
// Its words: the handshake flags (two sets of maxGrid × lws), the one-shot
// flags (maxGrid × lws) and the kernels' call state, from which they take
// the values they wait for, so nothing needs a reset under either signal
// protocol.
//
// Files: pull.go (layout and driver), rounds.go (the rounds through staging
// sets), pieces.go (a whole call copied in pieces), pull.cu (kernels),
// kernel.go (launch and Go twin), oneshot.go (the one-shot launch and twin),
// cepull.go (the copy engine's pulls), ring.go (the ring for large calls),
// pull_test.go.
package pull

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// Maker lays out and makes the pull engine.
type Maker struct {
	spec intranode.Spec
	rows int // rows of each block per round (0: whole calls)
	// lanes is the launches in flight at once: 2 on one node for rounds
	// (under a bound, or copied in on more than two GPUs), else 1.
	lanes int
	sets  int // staging sets in rounds: lanes + 1
	// inRows is the rows of each block per round of a whole call copied
	// in, staged in the symmetric input (0: such calls copy in whole or
	// in pieces).
	inRows       int
	flags, state symm.Pad // per lane
	peerTable    symm.Region
	inputTable   symm.Region // whole calls: every node peer's symmetric input
	firstCopy    symm.Region // whole calls on one node: the copy stream's first copy (Make)
	staging      symm.Region // sets of (world − nodes) × rows rows each (in rounds)
	// roundsTable (in rounds) is every node peer's staging as mapped here,
	// shifted to where its sets hold this rank's blocks (setBlock);
	// inputRounds the same of the staging in the symmetric inputs (inRows).
	roundsTable, inputRounds symm.Region
	// One shot (oneshot.go): bytes of a landing slot (0: none), the slots
	// (2 parities × lws) and their flags.
	slot         int64
	landing      symm.Region
	oneShotFlags symm.Pad
	// By the copy engine (cepull.go): the settings in effect (MinBlock 0:
	// never), the landing slots and the reads-done words.
	ce        CopyEngine
	ceBySize  bool // ce.Chunk was 0: each call's chunk follows its block
	ceLanding symm.Region
	ceDone    symm.Pad
	// Around the ring (ring.go): the settings in effect (MinBlock 0:
	// never) and the ring's maker (nil: never).
	rg   Ring
	ring *ring.Maker
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the pull engine's maker for spec: whole calls read from
// the context's symmetric input (rows 0), or rounds of rows rows of each
// destination's block through staging sets of its own. Whole calls whose
// blocks are at most oneShot bytes go in one shot (0: DefaultOneShotInput
// / GPUs per node; negative: none), on nodes of several GPUs; whole calls
// of registered inputs whose blocks are at least ce.MinBlock are pulled by
// the copy engine (CopyEngine; cepull.go); whole calls whose blocks are at
// least rg.MinBlock go around the ring (Ring; ring.go).
func NewMaker(spec intranode.Spec, rows int, oneShot int64, ce CopyEngine, rg Ring) *Maker {
	m := &Maker{spec: spec, rows: rows, lanes: 1}
	lws, rowBytes := int64(spec.LocalSize()), spec.RowBytes()
	if spec.Place.Shape.Nodes == 1 && (rows > 0 || lws > 2) {
		m.lanes = 2 // rounds, or whole calls copied in rounds
	}
	m.sets = m.lanes + 1
	if rows == 0 && m.lanes > 1 {
		staging := min(inStagingBytes, int64(spec.MaxRows)*rowBytes)
		m.inRows = int(staging / (int64(m.sets) * (lws - 1) * rowBytes))
	}
	if rows == 0 {
		m.ce, m.ceBySize = ce.resolve(spec), ce.Chunk <= 0
		if m.rg = rg.Resolved(spec); m.rg.MinBlock > 0 {
			m.ring = ring.NewMaker(spec, m.rg.Shape)
		}
	}
	if oneShot == 0 {
		oneShot = DefaultOneShotInput / int64(spec.LocalSize())
	}
	if rows == 0 && oneShot > 0 && spec.LocalSize() > 1 {
		block := int64(spec.MaxRows/spec.Place.Shape.World()) * spec.RowBytes()
		m.slot = (min(oneShot, block) + 15) / 16 * 16
	}
	return m
}

// maxGrid is the most blocks a launch has: one per SM of the budget.
func (m *Maker) maxGrid() int { return max(1, min(m.spec.ReductionSMs, maxBlocks)) }

// laneFlags is the handshake flags of one lane: two sets of maxGrid × lws.
func (m *Maker) laneFlags() int { return flagSets * m.maxGrid() * m.spec.LocalSize() }

// Prepare loads the kernel for the spec's dtype and node size, the
// reduce kernel that sums the copy engine's pulls, and the one that
// copies the pieces (the int32 reduce: whole calls on one node).
func (m *Maker) Prepare(dev device.Device) error {
	if m.ce.MinBlock > 0 {
		if err := kernels.Prepare(dev, m.spec.DType); err != nil {
			return err
		}
	}
	if m.rows == 0 && m.spec.Place.Shape.Nodes == 1 {
		if err := kernels.Prepare(dev, dtype.I32); err != nil {
			return err
		}
	}
	if m.ring != nil {
		if err := m.ring.Prepare(dev); err != nil {
			return err
		}
	}
	return Prepare(dev, m.spec.DType, m.spec.LocalSize())
}

// AddTo lays out the handshake flags, the call state and the peer table
// (the symmetric input is the context's).
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.flags = l.AddPad("pull flags", m.lanes*m.laneFlags())
	m.state = l.AddPad("pull call state", m.lanes*stateWords)
	m.peerTable = l.Add("pull peer table", int64(lws)*8)
	if m.rows == 0 {
		m.inputTable = l.Add("pull input table", int64(lws)*8)
		if m.spec.Place.Shape.Nodes == 1 {
			m.firstCopy = l.Add("pull copy stream's first copy", 32)
		}
	}
	if m.inRows > 0 {
		m.inputRounds = l.Add("pull copy-in rounds table", int64(lws)*8)
	}
	if m.rows > 0 {
		m.roundsTable = l.Add("pull rounds table", int64(lws)*8)
		if m.setBytes(m.rows) > 0 {
			m.staging = l.Add("pull staging", int64(m.sets)*m.setBytes(m.rows))
		}
	}
	if m.slot > 0 {
		m.landing = l.Add("pull one-shot landing slots", 2*int64(lws)*m.slot)
		m.oneShotFlags = l.AddPad("pull one-shot flags", m.maxGrid()*lws)
	}
	if m.ce.MinBlock > 0 {
		m.ceLayout(l)
	}
	if m.ring != nil {
		m.ring.AddTo(l)
	}
}

// Make builds the engine on env's heap, which must hold a symmetric input.
func (m *Maker) Make(ctx context.Context, env intranode.Env) (intranode.Engine, error) {
	lws := env.LocalSize()
	switch {
	case lws > MaxLocalSize:
		return nil, fmt.Errorf("pull: %d GPUs per node, at most %d: %w", lws, MaxLocalSize, device.ErrNotSupported)
	case m.rows == 0 && env.Input.Size < int64(env.MaxRows)*env.RowBytes():
		return nil, fmt.Errorf("pull: a symmetric input of %d bytes, want %d: %w", env.Input.Size, int64(env.MaxRows)*env.RowBytes(), device.ErrInvalidArgument)
	}
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	if err := intranode.WritePeerTable(env, m.peerTable); err != nil {
		return nil, err
	}
	e := &Engine{env: env, m: m}
	if m.rows > 0 {
		me := env.Place.LocalRank
		if _, err := intranode.WriteTable(env, m.roundsTable, "rounds table", func(lr int) device.Ptr {
			return intranode.PeerHeap(env, lr).Add(m.staging.Off + m.setBlock(0, me, lr)*m.blockBytes(m.rows))
		}); err != nil {
			return nil, err
		}
	}
	if m.rows == 0 {
		var err error
		if e.inputPeers, err = intranode.WriteInputTable(env, m.inputTable); err != nil {
			return nil, err
		}
	}
	if m.inRows > 0 {
		me := env.Place.LocalRank
		if _, err := intranode.WriteTable(env, m.inputRounds, "copy-in rounds table", func(lr int) device.Ptr {
			return e.inputPeers[lr].Add(m.setBlock(0, me, lr) * m.blockBytes(m.inRows))
		}); err != nil {
			return nil, err
		}
	}
	if m.ce.MinBlock > 0 {
		if err := e.ceMake(); err != nil {
			return nil, errors.Join(fmt.Errorf("pull: %w", err), e.Close())
		}
	}
	if m.ring != nil {
		if err := e.ringMake(ctx, env); err != nil {
			return nil, errors.Join(fmt.Errorf("pull: %w", err), e.Close())
		}
	}
	if m.rows > 0 || env.Place.Shape.Nodes == 1 { // rounds, or whole calls copied in
		for i := range max(1, m.sets) {
			var err error
			if e.copied[i], err = env.Dev.NewEvent(); err == nil {
				e.read[i], err = env.Dev.NewEvent()
			}
			if err != nil {
				return nil, errors.Join(fmt.Errorf("pull: %w", err), e.Close())
			}
		}
		if m.firstCopy.Size > 0 {
			// The copy stream copies before any call's copy on the caller's
			// stream: in the other order the copies of calls copied in on
			// the copy stream ran slower for the rest of the process
			// (RESULTS.md).
			at := env.Heap.Local().Add(m.firstCopy.Off)
			if err := env.Dev.Copy(env.Streams.Copy[0], at.Add(16), at, 16); err != nil {
				return nil, errors.Join(fmt.Errorf("pull: %w", err), e.Close())
			}
		}
	}
	return e, nil
}

// Engine is one rank's pull engine.
type Engine struct {
	env intranode.Env
	m   *Maker
	// In rounds: the round of the call being enqueued, and per staging
	// set the end of its copy (copy stream) and of the pull that read it
	// (its lane's stream).
	round        int
	copied, read [maxSets]device.Event
	// Whole calls: every node peer's symmetric input (inputTable's, on the
	// host).
	inputPeers []device.Ptr
	// By the copy engine (cepull.go): its words, per slot the end of its
	// copy and of its sum, and the call's chunks so far.
	ceDone              symm.SignalPad
	ceLanded, ceReduced []device.Event
	ceK                 int
	// Around the ring (ring.go; nil: never).
	ring intranode.Engine
}

var _ intranode.Engine = (*Engine)(nil)

// sym is this rank's symmetric input.
func (e *Engine) sym() device.Ptr { return e.env.InputAt(e.env.Place.Rank) }

// views is where call's rows lie on every node peer, read in place: a
// registered input's views, or the peers' symmetric inputs for a call on
// this rank's (a whole call); 0 and nil for a call that is neither.
func (e *Engine) views(call intranode.Call) (device.Ptr, []device.Ptr) {
	switch {
	case call.InputViews != 0:
		return call.InputViews, call.InputPeers
	case e.m.rows == 0 && call.Input == e.sym():
		return e.inputs(), e.inputPeers
	}
	return 0, nil
}

// grid is the kernel's blocks for rows rows of rowBytes bytes on a budget
// of sms SMs (one block each): no more than there are 16-byte vectors for.
func grid(rowBytes int64, rows, sms int) int {
	vectors := rowBytes * int64(rows) / 16
	need := int(max(1, (vectors+block-1)/block))
	return max(1, min(sms, need, maxBlocks))
}

// Begin copies the call's rows into the symmetric input, unless the call
// goes in one shot, or the caller wrote them there (call.Input is the input
// region) or registered them. In rounds and for a whole call copied in
// pieces the copy stream (and, in rounds, the second lane) start after s
// instead: each round's or piece's copy comes with its pull.
func (e *Engine) Begin(s device.Stream, call intranode.Call) error {
	if e.oneShot(call) {
		return nil // read in place by its own rank
	}
	if e.ringed(call) {
		return e.ringBegin(s, call)
	}
	if e.cePull(call) {
		return e.ceBegin(s, call)
	}
	if e.staged(call) || e.pieces(call) > 1 {
		e.round = 0
		if e.m.lanes > 1 {
			if err := e.env.Streams.Join(e.env.Streams.Reduction, s); err != nil {
				return err
			}
		}
		return e.env.Streams.Join(e.env.Streams.Copy[0], s)
	}
	if !e.copiedIn(call) {
		return nil
	}
	if err := e.copyIn(s, call, 0, call.RowsPer, 0); err != nil {
		return fmt.Errorf("pull: copying the input into the symmetric input: %w", err)
	}
	return nil
}

// Step enqueues one node step on s: the kernel that sums rows [Row0,
// Row0+Rows) of this rank's block of node step.Node over the node's inputs
// into step.ReduceTo. The call's first step waits for every peer's input,
// its last ends once every peer read this rank's.
func (e *Engine) Step(s device.Stream, step intranode.Step) (intranode.Done, error) {
	lws, me, rowBytes := e.env.LocalSize(), e.env.Place.LocalRank, e.env.RowBytes()
	row := int64((step.Node*lws+me)*step.RowsPer+step.Row0) * rowBytes
	switch {
	case e.oneShot(step.Call):
		return e.oneShotStep(s, step)
	case e.ringed(step.Call):
		return e.ringStep(s, step)
	case e.cePull(step.Call):
		return e.ceStep(step)
	case step.InputViews != 0: // a registered input: read in place, rounds or not
		return e.pull(s, 0, step, step.InputViews, row, 0, step.First, step.Last)
	case e.m.rows > 0:
		return e.roundStep(s, step, e.heapStaging())
	case e.inRounds(step.Call):
		return e.copyInRounds(s, step)
	case e.pieces(step.Call) > 1:
		return e.pieceSteps(s, step)
	}
	return e.pull(s, 0, step, e.inputs(), row, e.ownRows(step), step.First, step.Last) // in the symmetric inputs
}

// minOwnInPlace is the smallest block (bytes of one destination's rows)
// whose own rows a copied-in whole call reads from the caller's input
// instead of copying them in, where skipping them splits a middle rank's
// copy in two: on 4 H200s that took longer at blocks of 1 and 2 MiB (the
// second copy costs more than the bytes it saves), less from 8 MiB
// (RESULTS.md). A variable for the tests.
var minOwnInPlace int64 = 8 << 20

// ownInPlace reports whether a whole call copied in leaves its own rows
// (this rank's blocks, one per node) in the caller's input, where the
// kernel reads them: on one node of two GPUs (no rank's copy splits; a
// gain from the smallest pulled calls on 2 H200s), or from blocks of
// minOwnInPlace; and only where the input's blocks are 16-byte aligned
// (else the kernel would take its element path).
func (e *Engine) ownInPlace(call intranode.Call) bool {
	block := int64(call.RowsPer) * e.env.RowBytes()
	pair := e.env.Place.Shape.Nodes == 1 && e.env.LocalSize() == 2
	return e.m.rows == 0 && e.copiedIn(call) && (pair || block >= minOwnInPlace) && e.rowsAligned(call.Input)
}

// rowsAligned reports whether every row of a matrix at p starts 16-byte
// aligned, so that the kernel reads or writes them with vectors (else it
// takes its element path, several times slower).
func (e *Engine) rowsAligned(p device.Ptr) bool {
	return (uint64(p)|uint64(e.env.RowBytes()))%16 == 0
}

// copiedIn reports whether call's input is a buffer of the caller's that
// the peers cannot read: neither the symmetric input nor registered.
func (e *Engine) copiedIn(call intranode.Call) bool {
	return call.Input != e.sym() && call.InputViews == 0
}

// part is step narrowed to rows [r0, r0+rows) of each block (a round's or
// a piece's), its result at the same rows of step.ReduceTo.
func (e *Engine) part(step intranode.Step, r0, rows int) intranode.Step {
	step.Row0, step.Rows = r0, rows
	step.ReduceTo = step.ReduceTo.Add(int64(r0) * e.env.RowBytes())
	return step
}

// ownRows is where step's own rows lie in the caller's input, where they
// are read in place (ownInPlace), else 0 (the table's entry).
func (e *Engine) ownRows(step intranode.Step) device.Ptr {
	if !e.ownInPlace(step.Call) {
		return 0
	}
	return e.ownIn(step)
}

// ownIn is where step's own rows lie in the caller's input: this rank's
// block of node step.Node, from row step.Row0.
func (e *Engine) ownIn(step intranode.Step) device.Ptr {
	g := step.Node*e.env.LocalSize() + e.env.Place.LocalRank
	return step.Input.Add(int64(g*step.RowsPer+step.Row0) * e.env.RowBytes())
}

// copyIn copies rows [r0, r0+rows) of every destination's block of call's
// input into the symmetric input on s, but this rank's own blocks where
// they are read in place, in as few copies as the blocks left are runs: by
// the copy engine, or by SM copies on sms SMs where sms is not 0.
func (e *Engine) copyIn(s device.Stream, call intranode.Call, r0, rows, sms int) error {
	world, lws, me, rowBytes := e.env.Place.Shape.World(), e.env.LocalSize(), e.env.Place.LocalRank, e.env.RowBytes()
	inPlace := e.ownInPlace(call)
	skip := func(g int) bool { return inPlace && g%lws == me }
	copyAt := func(at, n int64) error {
		if sms > 0 {
			return kernels.LaunchCopy(e.env.Dev, s, intranode.BlocksPerSM*sms, e.sym().Add(at), call.Input.Add(at), n)
		}
		return e.env.Dev.Copy(s, e.sym().Add(at), call.Input.Add(at), n)
	}
	copyRange := func(g0, g1 int) error { // blocks [g0, g1): one copy where the rows are whole blocks
		if r0 == 0 && rows == call.RowsPer {
			return copyAt(int64(g0*call.RowsPer)*rowBytes, int64((g1-g0)*rows)*rowBytes)
		}
		for g := g0; g < g1; g++ {
			if err := copyAt(int64(g*call.RowsPer+r0)*rowBytes, int64(rows)*rowBytes); err != nil {
				return err
			}
		}
		return nil
	}
	for g0 := 0; g0 < world; {
		if skip(g0) {
			g0++
			continue
		}
		g1 := g0 + 1
		for g1 < world && !skip(g1) {
			g1++
		}
		if err := copyRange(g0, g1); err != nil {
			return err
		}
		g0 = g1
	}
	return nil
}

// heaps is the device table of the node peers' heaps as mapped here.
func (e *Engine) heaps() device.Ptr { return e.env.Heap.Local().Add(e.m.peerTable.Off) }

// inputs is the device table of the node peers' symmetric inputs as
// mapped here (whole calls).
func (e *Engine) inputs() device.Ptr { return e.env.Heap.Local().Add(e.m.inputTable.Off) }

// pull launches the kernel for step's rows of this rank's block at offset
// off from every peer's input base in the table inputs (the symmetric
// inputs, the rounds table, or a registered input's views), this rank's
// own rows at own instead where own is not 0, on lane lane's flags and call
// state; arrive and done say which handshakes the launch makes (a step of
// no rows makes them alone: the copy engine's arrival, ceBegin).
func (e *Engine) pull(s device.Stream, lane int, step intranode.Step, inputs device.Ptr, off int64, own device.Ptr, arrive, done bool) (intranode.Done, error) {
	lws, me, rowBytes := e.env.LocalSize(), e.env.Place.LocalRank, e.env.RowBytes()
	p := launch{
		Peers:    e.heaps(),
		Inputs:   inputs,
		Off:      off,
		Out:      step.ReduceTo,
		Count:    int64(step.Rows) * int64(e.env.Cols),
		FlagsOff: e.m.flags.Off + 4*int64(lane*e.m.laneFlags()),
		LWS:      lws,
		Me:       me,
		State:    e.state(lane),
		MaxGrid:  e.m.maxGrid(),
		Own:      own,
	}
	if arrive {
		p.Phases |= phaseArrive
	}
	if done {
		p.Phases |= phaseDone
	}
	blocks := grid(rowBytes, step.Rows, e.m.maxGrid())
	p.Tag = inputTag(step.InputSerial, e.layoutTag(step.Call))
	rounds := e.m.rows > 0 || e.inRounds(step.Call)
	bulk := step.Rows > 0 && (int64(step.Rows)*rowBytes >= bulkMinBytes || (rounds && int64(step.RowsPer)*rowBytes >= bulkRoundsMinBlock))
	if err := run(e.env.Dev, s, e.env.DType, blocks, p, bulk); err != nil {
		return intranode.Done{}, fmt.Errorf("pull: node step %d: %w", step.Node, err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}

// layoutTag is the tag of the layout in which a call that reads the
// symmetric input leaves it for the peers: each rank chooses it from its own
// input (zero copy or copied in), so the arrival checks that they agree.
// Under a bound every rank stages its rows in the heap alike (0).
func (e *Engine) layoutTag(call intranode.Call) uint32 {
	switch {
	case e.cePull(call): // its arrival only (ceBegin)
		return tagCopyEngine
	case e.m.rows > 0:
		return 0
	case e.inRounds(call):
		return tagRounds
	case e.pieces(call) > 1:
		return tagPieces
	}
	return 0
}

// state is this rank's call state of lane lane.
func (e *Engine) state(lane int) device.Ptr {
	return e.env.Heap.Local().Add(e.m.state.Off + 4*int64(lane*stateWords))
}

// End has s wait for the copy stream and the second lane (in rounds;
// nothing else: the last step's kernel ends the call's handshakes).
func (e *Engine) End(s device.Stream, call intranode.Call) error {
	if e.ringed(call) {
		return e.ring.End(s, call)
	}
	if e.cePull(call) {
		return e.ceEnd(s, call)
	}
	if !e.staged(call) {
		return nil
	}
	if e.m.lanes > 1 {
		if err := e.env.Streams.Join(s, e.env.Streams.Reduction); err != nil {
			return err
		}
	}
	return e.env.Streams.Join(s, e.env.Streams.Copy[0])
}

// ReleaseWaits enqueues on s the abort word: every wait of the kernel ends.
func (e *Engine) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	for lane := range e.m.lanes {
		if err := e.env.Dev.Memset32(s, e.state(lane).Add(4*stateAbort), 1, 1); err != nil {
			return fmt.Errorf("pull: aborting the kernel's waits: %w", err)
		}
	}
	if e.m.ce.MinBlock > 0 {
		if err := e.ceDone.Release(s, uint32(epoch)); err != nil {
			return fmt.Errorf("pull: %w", err)
		}
	}
	if e.ring != nil {
		return e.ring.ReleaseWaits(s, epoch)
	}
	return nil
}

// Close releases the rounds' events (the engine's words are in the
// context's heap).
func (e *Engine) Close() error {
	var errs []error
	for _, ev := range append(append(e.copied[:], e.read[:]...), append(e.ceLanded, e.ceReduced...)...) {
		if ev != nil {
			errs = append(errs, ev.Close())
		}
	}
	if e.ring != nil {
		errs = append(errs, e.ring.Close())
	}
	return errors.Join(errs...)
}
