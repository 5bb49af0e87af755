package intranode

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/streams"
	"github.com/seed12530e24/hiercoll/symm"
)

// Engine is one rank's intra-node engine, built on its heap: what the call
// loop drives, node step by node step. Every method enqueues on the streams
// it is given (or the engine's own, joined back by End) and returns errors
// in the arguments before anything is enqueued.
type Engine interface {
	// Begin enqueues on s the start of a call: readiness handshakes with
	// the node peers, copies every step reads. s is after the caller's
	// input and after this rank's previous call.
	Begin(s device.Stream, call Call) error
	// Step enqueues node step step: this rank's block of the rows destined
	// to node step.Node, summed over the node's ranks into step.ReduceTo.
	// Done says after which stream's work the block is complete.
	Step(s device.Stream, step Step) (Done, error)
	// End enqueues on s the end of the call: after it, s is ordered after
	// every stream the engine used.
	End(s device.Stream, call Call) error
	// ReleaseWaits enqueues on s (a stream of its own, not a stuck one) the
	// writes of values past every target into this rank's own signal
	// words, epoch being the last call's, so that every wait on them ends.
	// It is the way out when a peer is gone: the results are garbage and
	// the engine must not be used again.
	ReleaseWaits(s device.Stream, epoch symm.Epoch) error
	// Close releases the engine's own resources (not the heap).
	Close() error
}

// Chunker is an engine whose node steps are cut into chunks so that each
// block's reduction overlaps its arrival (Step.Chunks). Chunks is how many
// for blocks of rowsPer rows of rowBytes bytes: asked (Tuning.Chunks), or
// by size where asked is 0, within what the engine can cut. An engine that
// is not a Chunker moves each block whole (Step.Chunks 1).
type Chunker interface {
	Chunks(asked, rowsPer int, rowBytes int64) int
}

// Maker is an engine before its heap exists.
type Maker interface {
	// Prepare loads the kernels the engine launches; the context calls it
	// before anything collective (loading a module behind a stream that
	// waits for a peer can block).
	Prepare(dev device.Device) error
	// AddTo lays out the engine's symmetric regions and pads in l.
	AddTo(l *symm.Layout)
	// Make builds the engine on env.Heap, laid out with AddTo. It may be
	// collective over env.Comm.
	Make(ctx context.Context, env Env) (Engine, error)
}

// Spec is what an engine is made for, the same on every rank.
type Spec struct {
	Place   symm.Place
	DType   dtype.DType
	Cols    int           // N: the columns of every row
	MaxRows int           // MaxM: the most rows of a call's input
	Proto   symm.Protocol // how the signal words tell calls apart
	// ReductionSMs is the SM budget of a reduce that runs beside other
	// work (a GEMM, the SM engine's pushes).
	ReductionSMs int
}

// RowBytes is the bytes of one row.
func (s Spec) RowBytes() int64 { return int64(s.Cols) * int64(s.DType.Size()) }

// LocalSize is the GPUs of the node.
func (s Spec) LocalSize() int { return s.Place.Shape.LocalSize }

// FinalGrid is the grid of a reduce that has every SM to itself on a device
// of sms SMs: two blocks per SM.
func (s Spec) FinalGrid(sms int) int { return max(sms, s.ReductionSMs) * BlocksPerSM }

// BlocksPerSM is how many kernel blocks run per SM of a budget.
const BlocksPerSM = 2

// Env is what Make builds an engine with.
type Env struct {
	Spec
	Dev  device.Device
	Comm bootstrap.Comm
	Heap *symm.Heap // laid out with the engine's regions
	// Streams are the context's streams, for an engine that forks from the
	// caller's stream (Begin) and merges back (End).
	Streams *streams.Set
	// Gemm are the GEMM signals, with GEMM overlap (nil without): an engine
	// that overlaps waits for a destination's rows on them.
	Gemm *GemmSignals
	// Input is the symmetric input region (MaxRows × Cols elements) the
	// context owns in InputHeap, where callers may write a call's input,
	// for engines that read the peers' inputs in place (InputAt); zero
	// when the context has none.
	Input symm.Region
	// InputHeap is the symmetric allocation Input lies in: one of its own,
	// apart from Heap, whose landing slots and words an engine's kernels
	// use while the peers read the input (nil: Heap). On 2 H200s the copy
	// engine's reads of a peer's memory kept their rate beside the sums
	// only from an allocation nothing else used (benchmarks/RESULTS.md).
	InputHeap *symm.Heap
}

// InputAt is global rank rank's symmetric input as mapped here.
func (e Env) InputAt(rank int) device.Ptr {
	h := e.InputHeap
	if h == nil {
		h = e.Heap
	}
	return h.At(rank, e.Input)
}

// WriteInputTable writes into table (LocalSize addresses in Heap) every
// node peer's symmetric input as mapped here, by local rank, and returns
// them.
func WriteInputTable(env Env, table symm.Region) ([]device.Ptr, error) {
	return WriteTable(env, table, "input table", func(lr int) device.Ptr { return env.InputAt(env.Place.NodePeer(lr)) })
}

// Call is one reduce-scatter, as every node step of it sees it.
type Call struct {
	Epoch   symm.Epoch // the call's epoch (its signal value)
	Input   device.Ptr // this rank's input: M × N
	RowsPer int        // M_per_rank: the rows of each destination's block
	// InputViews, where not 0, is a device table of LocalSize addresses:
	// every node peer's input of this call as mapped here (by local rank),
	// a registered input that the engines which read peers' rows (pull)
	// read in place instead of copying it into the symmetric input.
	InputViews device.Ptr
	// InputSerial names the registration (1, 2, ...: the same on every
	// rank, registrations being collective); 0 with InputViews 0. An engine
	// reading in place checks that every peer reads the same one.
	InputSerial uint32
	// InputPeers is InputViews's table on the host (nil with InputViews 0).
	InputPeers []device.Ptr
	// InputWholePages reports that every rank's registered input lies in
	// an allocation of whole large pages (device.Info.PageBytes), which
	// the copy engine reads at its rate (false with InputViews 0).
	InputWholePages bool
	// Summed: the producer's GEMM sums this rank's own block in its
	// epilogue (Sum), so the engine raises each block's arrival segment by
	// segment (Step.Chunks is the GEMM's segments) and launches no
	// reduction of the own node's step, only its waits.
	Summed bool
}

// Sum is the reduction of a rank's own block of a call (one node of several
// ranks, GEMM overlap) as its producer's GEMM does it: the own rows it
// computes, rounded to the dtype, then each node peer's landed block added
// and rounded, in the order the peers compute them (gemm.SumInTurn; with
// two ranks the reduce kernel's bits), into Dst.
type Sum struct {
	Dst  device.Ptr // RowsPer × Cols: the call's output rows of this rank
	Row0 int        // where the own block starts in the input
	Rows int        // the block's rows (RowsPer)
	// Blocks holds the landed blocks: local rank k's at Blocks + k·Stride
	// elements, RowsPer rows of Cols; block Self (this rank's) is not there.
	Blocks      device.Ptr
	Stride      int64
	Ranks, Self int
	// Arrivals are Ranks words: rows [j·SegmentRows, (j+1)·SegmentRows)
	// of local rank k's block have landed once word k reaches Base+j+1
	// (compared cyclically).
	Arrivals    device.Ptr
	Base        uint32
	SegmentRows int
}

// Step is one node step of a call: the rows destined to node Node.
type Step struct {
	Call
	Node int // the node whose rows are reduced (cur)
	// Row0 and Rows are the rows of each destination's block the step
	// moves: all of them, or one rail round's (the ring under a bound).
	Row0, Rows int
	ReduceTo   device.Ptr // where this rank's Rows × N result goes
	Chunks     int        // pieces each block is cut into (>= 1)
	First      bool       // the call's first node step
	Last       bool       // the call's last node step (its waits are the last on their words)
}

// Whole reports whether the step moves every row of each block.
func (s Step) Whole() bool { return s.Row0 == 0 && s.Rows == s.RowsPer }

// Done is where a node step's work ends: after Landed's work so far every
// row it moves between GPUs has landed, after Reduced's its block is at
// Step.ReduceTo (the same stream for engines that do both in one place).
// Staged, where not nil, is the stream whose work so far ends with the
// step's staging copy (the pull engine's rounds: the round's rows copied
// into a staging set), for tracing.
type Done struct {
	Landed, Reduced, Staged device.Stream
}

// RankSwizzle returns the order in which local rank lr scatters to its node
// peers: lr+1, lr+2, ..., ending with itself.
func RankSwizzle(lr, lws int) []int {
	order := make([]int, lws)
	for i := range order {
		order[i] = (lr + i + 1) % lws
	}
	return order
}

// RoundRows cuts a block of rpr rows into rounds of at most per rows, as
// few as hold them: rounds that differ by one row at most (not whole
// rounds and a short rest: a round of one row costs about what a whole
// one does), or, with shortFirst, a first round of a quarter of per (more
// where the count needs it), then whole rounds and the rest last.
func RoundRows(rpr, per int, shortFirst bool) []int {
	n := (rpr + per - 1) / per
	rows := make([]int, 0, n)
	if !shortFirst {
		for i := range n {
			rows = append(rows, rpr/n+min(1, max(0, rpr%n-i)))
		}
		return rows
	}
	r0 := 0
	if n > 1 {
		r0 = max((per+3)/4, rpr-(n-1)*per)
		rows = append(rows, r0)
	}
	for ; r0 < rpr; r0 += per {
		rows = append(rows, min(per, rpr-r0))
	}
	return rows
}

// ChunkRows returns the row range [r0, r1) of chunk c of a block of rows
// rows cut into chunks pieces.
func ChunkRows(rows, chunks, c int) (int, int) {
	per := (rows + chunks - 1) / chunks
	r0 := min(c*per, rows)
	return r0, min(r0+per, rows)
}

// CheckMapped returns an error unless every GPU of the node is mapped in
// env's heap.
func CheckMapped(env Env) error {
	if !env.Heap.Mapped(env.Place.NodeTeam()) {
		return fmt.Errorf("intranode: rank %d cannot map every GPU of its node (peer access over NVLink or same host needed): %w",
			env.Place.Rank, device.ErrNotSupported)
	}
	return nil
}

// WritePeerTable writes into region table of this rank's heap the node
// peers' heap base addresses as mapped here (lws 64-bit words): how a
// kernel finds the peers' heaps.
func WritePeerTable(env Env, table symm.Region) error {
	_, err := WriteTable(env, table, "peer table", func(lr int) device.Ptr { return PeerHeap(env, lr) })
	return err
}

// PeerHeap is local rank lr's heap as mapped here.
func PeerHeap(env Env, lr int) device.Ptr {
	base, _ := env.Heap.Peer(env.Place.NodePeer(lr))
	return base
}

// WriteTable writes into table (LocalSize addresses in Heap) at(lr) for
// every local rank lr, and returns them.
func WriteTable(env Env, table symm.Region, what string, at func(lr int) device.Ptr) ([]device.Ptr, error) {
	ptrs := make([]device.Ptr, env.LocalSize())
	b := make([]byte, 0, 8*len(ptrs))
	for lr := range ptrs {
		ptrs[lr] = at(lr)
		b = binary.LittleEndian.AppendUint64(b, uint64(ptrs[lr]))
	}
	if err := env.Dev.CopyToDevice(env.Heap.Local().Add(table.Off), b); err != nil {
		return nil, fmt.Errorf("intranode: writing the %s: %w", what, err)
	}
	return ptrs, nil
}

// LocalName names local rank lr of place's node with its rank and node.
func LocalName(place symm.Place, lr int) string {
	return fmt.Sprintf("rank %d (node %d, local rank %d)", place.NodePeer(lr), place.Node, lr)
}

// ReadyLabel labels the ready words of a pad whose word src is local rank
// src's.
func ReadyLabel(place symm.Place) func(owner, src int) string {
	return func(_, src int) string { return "ready flag of " + LocalName(place, src) }
}
