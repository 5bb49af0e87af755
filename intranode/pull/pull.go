// Package pull is the pull-reduce engine: a node step of ReduceScatter2D as
// one kernel in which each rank reads its own row block from every node
// peer's symmetric input, sums it in fp32 (int32 exact) and writes its output
// once. Nothing is pushed to a peer and there is no scatter buffer to read
// back, so each byte crosses NVLink once and no second pass follows.
//
// The rows must lie in the symmetric input region (Buffers.Input, the same
// offset on every rank): a caller writes them there itself (zero copy), or
// the call copies them in first. Two handshakes inside the kernel guard the
// input (pull.cu): a rank reads a peer's input only after the peer's launch
// started, and a launch ends only after every peer finished reading this
// rank's input, so whatever follows it on the stream may overwrite it.
//
//	rank r of node, step cur:  out = Σ_q input_q[rows of (cur, r)]   q = 0..lws-1
//
// Files: pull.go (layout and driver), pull.cu (kernel), kernel.go (launch and
// Go twin), pull_test.go.
package pull

import (
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/symm"
)

// Buffers are the engine's symmetric regions.
type Buffers struct {
	Input symm.Region // MaxM × N elements: the call's rows, where peers read them
	Flags symm.Pad    // 2 sets × MaxBlocks × lws words: arrival, then reads done
	State symm.Pad    // the kernel's call state
	Peers symm.Region // lws heap bases as mapped here
}

// AddTo lays out the engine's regions for nodes of lws GPUs and inputs of
// input bytes.
func (b *Buffers) AddTo(l *symm.Layout, lws int, input int64) {
	b.Flags = l.AddPad("pull flags", 2*MaxBlocks*lws)
	b.State = l.AddPad("pull call state", stateWords)
	b.Peers = l.Add("pull peer table", int64(lws)*8)
	b.Input = l.Add("symmetric input", input)
}

// Engine is one rank's pull-reduce engine.
type Engine struct {
	dev   device.Device
	place symm.Place
	heap  *symm.Heap
	buf   Buffers
	dt    dtype.DType
	cols  int
}

// New returns the engine of the rank at place on heap laid out with buf.
// The node team must be mapped.
func New(dev device.Device, place symm.Place, heap *symm.Heap, buf Buffers, dt dtype.DType, cols int) (*Engine, error) {
	lws := place.Shape.LocalSize
	if lws > MaxLocalSize {
		return nil, fmt.Errorf("pull: %d GPUs per node, at most %d: %w", lws, MaxLocalSize, device.ErrNotSupported)
	}
	if !heap.Mapped(place.NodeTeam()) {
		return nil, fmt.Errorf("pull: rank %d cannot map every GPU of its node: %w", place.Rank, device.ErrNotSupported)
	}
	table := make([]byte, 0, 8*lws)
	for lr := 0; lr < lws; lr++ {
		base, _ := heap.Peer(place.NodePeer(lr))
		table = binary.LittleEndian.AppendUint64(table, uint64(base))
	}
	if err := dev.CopyToDevice(heap.Local().Add(buf.Peers.Off), table); err != nil {
		return nil, fmt.Errorf("pull: writing the peer table: %w", err)
	}
	return &Engine{dev: dev, place: place, heap: heap, buf: buf, dt: dt, cols: cols}, nil
}

// Input is this rank's symmetric input region: rows written here are read
// by the peers in place.
func (e *Engine) Input() device.Ptr { return e.heap.Local().Add(e.buf.Input.Off) }

// InputBytes is the symmetric input region's size.
func (e *Engine) InputBytes() int64 { return e.buf.Input.Size }

// Step is one node step: the block of rowsPer rows for this rank of node
// Node, summed over the node into To.
type Step struct {
	Node    int
	RowsPer int
	To      device.Ptr
	First   bool // the call's first node step: wait for every peer's input
	Last    bool // the call's last: end once every peer read this input
}

// Grid is the kernel's blocks for blocks of count elements on a budget of
// sms SMs (one block each): no more than there are vectors for.
func Grid(dt dtype.DType, count int64, sms int) int {
	vectors := count * int64(dt.Size()) / 16
	need := int(max(1, (vectors+Block-1)/Block))
	return max(1, min(sms, need, MaxBlocks))
}

// Run enqueues step on s with grid blocks (the same on every rank).
func (e *Engine) Run(s device.Stream, step Step, grid int) error {
	lws, me := e.place.Shape.LocalSize, e.place.LocalRank
	rowBytes := int64(e.cols) * int64(e.dt.Size())
	p := launch{
		Peers:    e.heap.Local().Add(e.buf.Peers.Off),
		Off:      e.buf.Input.Off + int64((step.Node*lws+me)*step.RowsPer)*rowBytes,
		Out:      step.To,
		Count:    int64(step.RowsPer) * int64(e.cols),
		FlagsOff: e.buf.Flags.Off,
		LWS:      lws,
		Me:       me,
		State:    e.heap.Local().Add(e.buf.State.Off),
	}
	if step.First {
		p.Phases |= phaseArrive
	}
	if step.Last {
		p.Phases |= phaseDone
	}
	if err := run(e.dev, s, e.dt, grid, p); err != nil {
		return fmt.Errorf("pull: node step %d: %w", step.Node, err)
	}
	return nil
}

// ReleaseWaits enqueues on s (a stream that is not stuck) the abort word:
// every wait of the kernel ends. For a peer that is gone; the results are
// garbage and the engine must not be used again.
func (e *Engine) ReleaseWaits(s device.Stream) error {
	abort := e.heap.Local().Add(e.buf.State.Off + 4*stateAbort)
	if err := e.dev.Memset32(s, abort, 1, 1); err != nil {
		return fmt.Errorf("pull: aborting the kernel's waits: %w", err)
	}
	return nil
}
