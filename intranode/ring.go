package intranode

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/symm"
)

// The ring: the node step in bounded memory (NCCL's simple protocol). The
// rows destined to each local rank d travel the ring lr -> lr+1 from d+1
// around to d, lws-1 hops, each hop adding the local rows
// (recvReduceSend) and the last writing the result (recvReduceCopy), one
// chunk per message through FIFO slots with head / tail credits
// (kernels/cuda/ring.cu). A rank holds, per channel and per node peer,
// Slots slots of one chunk: memory that does not depend on M.

// RingShape is the geometry of the ring's FIFOs. Every rank of a node uses
// the same one.
type RingShape struct {
	Channels   int   // independent rings, one thread block each
	Slots      int   // FIFO slots per channel and node peer
	ChunkBytes int64 // the bytes one message carries: one slot
}

// SlotBytes is the distance between two slots: a chunk rounded up to 16
// bytes, so vectors stay aligned.
func (r RingShape) SlotBytes() int64 { return (r.ChunkBytes + 15) / 16 * 16 }

// FifoBytes is one rank's FIFO memory in a node of lws ranks:
// Channels × (lws-1) × Slots × SlotBytes.
func (r RingShape) FifoBytes(lws int) int64 {
	return int64(r.Channels) * int64(lws-1) * int64(r.Slots) * r.SlotBytes()
}

// Words is the number of credit words of each kind (tails, heads) per rank.
func (r RingShape) Words(lws int) int { return r.Channels * (lws - 1) }

// Check reports whether the shape can carry elements of elemSize bytes.
func (r RingShape) Check(elemSize int) error {
	if r.Channels < 1 || r.Slots < 1 || r.ChunkBytes < int64(elemSize) || r.ChunkBytes%int64(elemSize) != 0 {
		return fmt.Errorf("intranode: ring of %d channels, %d slots, %d-byte chunks (want positive counts and whole %d-byte elements): %w",
			r.Channels, r.Slots, r.ChunkBytes, elemSize, device.ErrInvalidArgument)
	}
	return nil
}

// AddRingTo lays out the ring's credit pads and FIFOs, after
// AddTo(l, place, 0) laid out the stage's other (small) regions; the stage
// built on these buffers runs the ring.
func (b *Buffers) AddRingTo(l *symm.Layout, place symm.Place, shape RingShape) {
	lws := place.Shape.LocalSize
	b.Ring = shape
	b.Tails = l.AddPad("ring tails", shape.Words(lws))
	b.Heads = l.AddPad("ring heads", shape.Words(lws))
	b.Fifo = l.Add("ring fifo", shape.FifoBytes(lws))
}

// ringPads labels the ring's credit words, as the kernels name them.
func (st *Stage) ringPads() {
	rank0, lws := st.place.NodePeer(0), st.lws()
	st.tails = st.heap.Signals(st.buf.Tails, st.proto, func(owner, i int) string {
		return ring.TailLabel(rank0, lws, owner-rank0, i)
	})
	st.heads = st.heap.Signals(st.buf.Heads, st.proto, func(owner, i int) string {
		return ring.HeadLabel(rank0, lws, owner-rank0, i)
	})
}

// RingStep is the part of a node step one ring launch moves: rows [Row0,
// Row0+Rows) of each destination's block (all of them, or a rail round's).
type RingStep struct {
	Node       int        // the node whose rows are reduced (cur)
	Input      device.Ptr // this rank's input: M × N
	RowsPer    int        // M_per_rank: the rows of each destination's block
	Row0, Rows int
	Epoch      symm.Epoch // the call's epoch
	ReduceTo   device.Ptr // where this rank's Rows × N result goes
}

// Ring enqueues one ring launch on s (SM stores, credits waited on inside
// the kernel, so nothing else is needed on the stream).
func (st *Stage) Ring(s device.Stream, step RingStep) error {
	shape := st.buf.Ring
	if shape.Channels == 0 {
		return fmt.Errorf("intranode: ring step on a stage laid out without ring buffers: %w", device.ErrInvalidArgument)
	}
	lws, es := st.lws(), int64(st.dt.Size())
	count := int64(step.Rows) * int64(st.n)
	if step.Rows < 1 || step.Row0 < 0 || step.Row0+step.Rows > step.RowsPer {
		return fmt.Errorf("intranode: ring step of rows [%d, %d) of %d: %w", step.Row0, step.Row0+step.Rows, step.RowsPer, device.ErrInvalidArgument)
	}
	// Each channel takes an equal share, whole 16-byte vectors, cut into
	// chunks; every channel posts the same number of messages.
	vector := 16 / es
	per := (count + int64(shape.Channels) - 1) / int64(shape.Channels)
	per = (per + vector - 1) / vector * vector
	chunk := shape.ChunkBytes / es
	msgs := uint32((per + chunk - 1) / chunk)
	local := st.heap.Local()
	p := ring.Params{
		In:        step.Input.Add(int64(step.Node*lws*step.RowsPer+step.Row0) * st.rowBytes()),
		Out:       step.ReduceTo,
		Peers:     local.Add(st.buf.PeerTable.Off),
		Stride:    int64(step.RowsPer) * int64(st.n),
		Count:     count,
		Per:       per,
		Chunk:     chunk,
		FifoOff:   st.buf.Fifo.Off,
		SlotBytes: shape.SlotBytes(),
		TailsOff:  st.buf.Tails.Off,
		HeadsOff:  st.buf.Heads.Off,
		ReadyOff:  st.buf.Ready.Off,
		Msgs:      msgs,
		Base:      st.ringSent,
		Epoch:     uint32(step.Epoch),
		LWS:       lws,
		Rank:      st.place.LocalRank,
		Slots:     shape.Slots,
		Channels:  shape.Channels,
		Rank0:     st.place.NodePeer(0),
	}
	if err := ring.Launch(st.dev, s, st.dt, p); err != nil {
		return fmt.Errorf("intranode: ring: %w", err)
	}
	st.ringSent += msgs
	return nil
}

// RingFifo is this rank's FIFO slots: where its ring predecessor writes.
func (st *Stage) RingFifo() (device.Ptr, int64) {
	return st.heap.Local().Add(st.buf.Fifo.Off), st.buf.Fifo.Size
}
