// Package ring is the intra-node engine in bounded memory (NCCL's simple
// protocol). The rows destined to each local rank d travel the ring
// lr -> lr+1 from d+1 around to d, lws-1 hops, each hop adding the local
// rows (recvReduceSend) and the last writing the result (recvReduceCopy),
// one chunk per message through FIFO slots with head / tail credits
// (ring.cu). A rank holds, per channel and per node peer, Slots slots of one
// chunk: memory that does not depend on M. A step may move a part of each
// block's rows (Step.Row0, Step.Rows), so that a rail with bounded buffers
// can take a call in rounds.
//
// Its words: ready[src] (the kernel's readiness handshake, the launch's
// number), the tails and heads, which count messages and only grow, and
// the call state the kernel keeps its counts in (Params.State), so that
// its launches replay in CUDA graphs under either signal protocol.
package ring

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// Shape is the geometry of the ring's FIFOs. Every rank of a node uses the
// same one.
type Shape struct {
	Channels   int   // independent rings, one thread block each
	Slots      int   // FIFO slots per channel and node peer
	ChunkBytes int64 // the bytes one message carries: one slot
}

// SlotBytes is the distance between two slots: a chunk rounded up to 16
// bytes, so vectors stay aligned.
func (r Shape) SlotBytes() int64 { return (r.ChunkBytes + 15) / 16 * 16 }

// FifoBytes is one rank's FIFO memory in a node of lws ranks:
// Channels × (lws-1) × Slots × SlotBytes.
func (r Shape) FifoBytes(lws int) int64 {
	return int64(r.Channels) * int64(lws-1) * int64(r.Slots) * r.SlotBytes()
}

// Words is the number of credit words of each kind (tails, heads) per rank.
func (r Shape) Words(lws int) int { return r.Channels * (lws - 1) }

// Check reports whether the shape can carry elements of elemSize bytes.
func (r Shape) Check(elemSize int) error {
	if r.Channels < 1 || r.Slots < 1 || r.ChunkBytes < int64(elemSize) || r.ChunkBytes%int64(elemSize) != 0 {
		return fmt.Errorf("ring: %d channels, %d slots, %d-byte chunks (want positive counts and whole %d-byte elements): %w",
			r.Channels, r.Slots, r.ChunkBytes, elemSize, device.ErrInvalidArgument)
	}
	return nil
}

// The ring's default shape, and the smallest chunk it shrinks to under a
// bound. Each channel's steps wait on their neighbours' credits, so the
// rate grows with the channels: on 4 H100s 64 of them moved 2.3–2.6 times
// what 16 did (benchmarks/RESULTS.md).
const (
	defaultChannels = 64
	defaultSlots    = 2
	defaultChunk    = 128 << 10
	MinChunkBytes   = 4 << 10
)

// ShapeOf is the ring's shape from the asked channels, slots and chunk
// bytes (0: the default) on a device of sms SMs (0: unknown; channels are
// capped by them).
func ShapeOf(channels, slots int, chunkBytes int64, sms int) Shape {
	r := Shape{Channels: channels, Slots: slots, ChunkBytes: chunkBytes}
	if r.Channels == 0 {
		r.Channels = defaultChannels
		if sms > 0 {
			r.Channels = min(r.Channels, sms)
		}
	}
	if r.Slots == 0 {
		r.Slots = defaultSlots
	}
	if r.ChunkBytes == 0 {
		r.ChunkBytes = defaultChunk
	}
	return r
}

// Fit is r with its chunk shrunk, not below MinChunkBytes nor grown, so
// that a node of lws ranks holds the FIFOs and fixed bytes of pads within
// budget (chunks whole multiples of align bytes).
func (r Shape) Fit(budget, fixed int64, lws int, align int64) Shape {
	per := int64(r.Channels) * int64(max(lws-1, 1)) * int64(r.Slots)
	chunk := (budget - fixed) / per / align * align
	r.ChunkBytes = max(MinChunkBytes, min(r.ChunkBytes, chunk))
	return r
}

// Maker lays out and makes the ring.
type Maker struct {
	spec            intranode.Spec
	shape           Shape
	ready           symm.Pad
	tails, heads    symm.Pad
	state           symm.Pad
	peerTable, fifo symm.Region
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the ring's maker for spec with FIFOs of shape.
func NewMaker(spec intranode.Spec, shape Shape) *Maker { return &Maker{spec: spec, shape: shape} }

// Prepare loads the ring kernel.
func (m *Maker) Prepare(dev device.Device) error { return Prepare(dev, m.spec.DType) }

// AddTo lays out the ready words, the credit pads, the peer table and the
// FIFOs.
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.ready = l.AddPad("ready", lws)
	m.peerTable = l.Add("peer table", int64(lws)*8)
	m.tails = l.AddPad("ring tails", m.shape.Words(lws))
	m.heads = l.AddPad("ring heads", m.shape.Words(lws))
	m.state = l.AddPad("ring call state", StateWords(m.shape.Channels))
	m.fifo = l.Add("ring fifo", m.shape.FifoBytes(lws))
}

// Make builds the ring on env's heap.
func (m *Maker) Make(_ context.Context, env intranode.Env) (intranode.Engine, error) {
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	if err := intranode.WritePeerTable(env, m.peerTable); err != nil {
		return nil, err
	}
	e := &Engine{env: env, m: m}
	return e, nil
}

// Engine is one rank's ring.
type Engine struct {
	env intranode.Env
	m   *Maker
}

var _ intranode.Engine = (*Engine)(nil)

// Begin does nothing: the readiness handshakes happen inside the kernel.
func (e *Engine) Begin(device.Stream, intranode.Call) error { return nil }

// End does nothing: every step is on s.
func (e *Engine) End(device.Stream, intranode.Call) error { return nil }

// Step enqueues one ring launch on s (SM stores, credits waited on inside
// the kernel, so nothing else is needed on the stream).
func (e *Engine) Step(s device.Stream, step intranode.Step) (intranode.Done, error) {
	shape := e.m.shape
	lws, es := e.env.LocalSize(), int64(e.env.DType.Size())
	count := int64(step.Rows) * int64(e.env.Cols)
	if step.Rows < 1 || step.Row0 < 0 || step.Row0+step.Rows > step.RowsPer {
		return intranode.Done{}, fmt.Errorf("ring: step of rows [%d, %d) of %d: %w", step.Row0, step.Row0+step.Rows, step.RowsPer, device.ErrInvalidArgument)
	}
	// Each channel takes an equal share, whole 16-byte vectors, cut into
	// chunks; every channel posts the same number of messages.
	vector := 16 / es
	per := (count + int64(shape.Channels) - 1) / int64(shape.Channels)
	per = (per + vector - 1) / vector * vector
	chunk := shape.ChunkBytes / es
	msgs := uint32((per + chunk - 1) / chunk)
	local := e.env.Heap.Local()
	p := Params{
		In:        step.Input.Add(int64(step.Node*lws*step.RowsPer+step.Row0) * e.env.RowBytes()),
		Out:       step.ReduceTo,
		Peers:     local.Add(e.m.peerTable.Off),
		Stride:    int64(step.RowsPer) * int64(e.env.Cols),
		Count:     count,
		Per:       per,
		Chunk:     chunk,
		FifoOff:   e.m.fifo.Off,
		SlotBytes: shape.SlotBytes(),
		TailsOff:  e.m.tails.Off,
		HeadsOff:  e.m.heads.Off,
		ReadyOff:  e.m.ready.Off,
		Msgs:      msgs,
		State:     e.state(),
		LWS:       lws,
		Rank:      e.env.Place.LocalRank,
		Slots:     shape.Slots,
		Channels:  shape.Channels,
		Rank0:     e.env.Place.NodePeer(0),
	}
	if err := Launch(e.env.Dev, s, e.env.DType, p); err != nil {
		return intranode.Done{}, fmt.Errorf("ring: %w", err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}

// state is this rank's call state.
func (e *Engine) state() device.Ptr { return e.env.Heap.Local().Add(e.m.state.Off) }

// ReceiveRows is this rank's FIFO slots, where its ring predecessor writes
// (whatever the rows).
func (e *Engine) ReceiveRows(int) (device.Ptr, int64) {
	return e.env.Heap.Local().Add(e.m.fifo.Off), e.m.fifo.Size
}

// ReleaseWaits sets the abort word: every wait of the kernel on this rank
// ends.
func (e *Engine) ReleaseWaits(s device.Stream, _ symm.Epoch) error {
	if err := e.env.Dev.Memset32(s, e.state().Add(AbortWord), 1, 1); err != nil {
		return fmt.Errorf("ring: aborting the kernel's waits: %w", err)
	}
	return nil
}

// Close has nothing of its own to release.
func (e *Engine) Close() error { return nil }
