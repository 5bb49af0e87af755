// Package push is the SM engine: a whole node step in one push-reduce
// kernel on the caller's stream. Push blocks store this rank's rows into the
// peers' scatter buffers (rank swizzle, chunk by chunk) and count arrivals
// with release atomics; reduce blocks wait on the counts and sum the peers'
// blocks with the own one, read straight from the input. On NVLink with
// traffic both ways SM stores keep a higher rate than the copy engine, and
// one launch per step is the least latency there is.
//
// Its words: ready[src] (the kernel's readiness handshake), the arrival
// counters (lws × MaxChunks, raised by the kernel's atomics) and the
// kernel's call state (CallStateWords), from which it takes the values it
// waits for, so it needs no reset under either protocol.
package push

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// pushSMs is the engine's budget of push blocks' SMs (sweeps of it measured
// within 1 µs of this at 1–8 MiB; benchmarks/RESULTS.md).
const pushSMs = 32

// Maker lays out and makes the SM engine.
type Maker struct {
	spec                   intranode.Spec
	ready, counters, state symm.Pad
	peerTable, scatter     symm.Region
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the SM engine's maker for spec.
func NewMaker(spec intranode.Spec) *Maker { return &Maker{spec: spec} }

// Prepare loads the push-reduce kernel.
func (m *Maker) Prepare(dev device.Device) error { return Prepare(dev, m.spec.DType) }

// AddTo lays out the ready words, arrival counters, call state, peer table
// and scatter buffer.
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.ready = l.AddPad("ready", lws)
	m.counters = l.AddPad("arrival counters", lws*MaxChunks)
	m.state = l.AddPad("push-reduce call state", CallStateWords)
	m.peerTable = l.Add("peer table", int64(lws)*8)
	m.scatter = l.Add("scatter", int64(m.spec.MaxRows)*m.spec.RowBytes())
}

// Make builds the engine on env's heap.
func (m *Maker) Make(_ context.Context, env intranode.Env) (intranode.Engine, error) {
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	if err := intranode.WritePeerTable(env, m.peerTable); err != nil {
		return nil, err
	}
	e := &Engine{env: env, m: m}
	e.ready = env.Heap.Signals(m.ready, env.Proto, intranode.ReadyLabel(env.Place))
	return e, nil
}

// Engine is one rank's SM engine.
type Engine struct {
	env   intranode.Env
	m     *Maker
	ready symm.SignalPad
}

var _ intranode.Engine = (*Engine)(nil)

// smGrid is the thread blocks of a push-reduce: push and reduce blocks.
// Every rank must use the same grid (the arrival counters count push
// blocks).
type smGrid struct {
	PushBlocks, ReduceBlocks int
}

// grid sizes the kernel for blocks of count elements in chunks: the SM
// budgets, two blocks per SM, but no more blocks than there are 16-byte
// vectors per chunk for a block's threads.
func (e *Engine) grid(count int64, chunks int) smGrid {
	vectors := count * int64(e.env.DType.Size()) / 16 / int64(chunks)
	need := int(max(1, (vectors+Block-1)/Block))
	push := pushSMs
	if sms := e.env.Dev.Info().SMs; sms > 0 {
		push = min(push, sms)
	}
	return smGrid{
		PushBlocks:   max(1, min(intranode.BlocksPerSM*push, need)),
		ReduceBlocks: max(1, min(intranode.BlocksPerSM*e.env.ReductionSMs, need)),
	}
}

// minChunk is the smallest chunk cut by size (Chunks).
const minChunk = 4 << 20

// Chunks cuts each block into asked chunks, or by size (blocks of at least
// minChunk bytes each), at most MaxChunks: the kernel splits elements, not
// rows.
func (e *Engine) Chunks(asked, rowsPer int, rowBytes int64) int {
	if asked == 0 {
		asked = int(min(int64(rowsPer)*rowBytes/minChunk, MaxChunks))
	}
	return max(1, min(asked, MaxChunks))
}

// Begin does nothing: the readiness handshakes happen inside the kernel.
func (e *Engine) Begin(device.Stream, intranode.Call) error { return nil }

// Step enqueues one node step on s: a single kernel that pushes this rank's
// rows to its node peers and reduces what they pushed into step.ReduceTo.
func (e *Engine) Step(s device.Stream, step intranode.Step) (intranode.Done, error) {
	if !step.Whole() {
		return intranode.Done{}, fmt.Errorf("push: a step of rows [%d, %d) of %d: the SM engine moves whole blocks: %w",
			step.Row0, step.Row0+step.Rows, step.RowsPer, device.ErrInvalidArgument)
	}
	lws := e.env.LocalSize()
	rowBytes := e.env.RowBytes()
	chunks := e.Chunks(step.Chunks, step.RowsPer, rowBytes)
	count := int64(step.RowsPer) * int64(e.env.Cols)
	grid := e.grid(count, chunks)
	p := Params{
		In:           step.Input.Add(int64(step.Node*lws*step.RowsPer) * rowBytes),
		Out:          step.ReduceTo,
		Peers:        e.env.Heap.Local().Add(e.m.peerTable.Off),
		ScatterOff:   e.m.scatter.Off + int64(step.Node*lws*step.RowsPer)*rowBytes,
		CountersOff:  e.m.counters.Off,
		ReadyOff:     e.m.ready.Off,
		LWS:          lws,
		Rank:         e.env.Place.LocalRank,
		Count:        count,
		Chunks:       chunks,
		PushBlocks:   grid.PushBlocks,
		ReduceBlocks: grid.ReduceBlocks,
		State:        e.env.Heap.Local().Add(e.m.state.Off),
	}
	if err := Launch(e.env.Dev, s, e.env.DType, p); err != nil {
		return intranode.Done{}, fmt.Errorf("push: push-reduce: %w", err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}

// End does nothing: every step is on s.
func (e *Engine) End(device.Stream, intranode.Call) error { return nil }

// ReceiveRows is this rank's scatter buffer, where its node peers push
// their rows: rows × Cols elements for calls of rows rows.
func (e *Engine) ReceiveRows(rows int) (device.Ptr, int64) {
	return e.env.Heap.Local().Add(e.m.scatter.Off), int64(rows) * e.env.RowBytes()
}

// ReleaseWaits sets the kernel's abort word, which ends every wait of the
// kernel, and releases the ready words.
func (e *Engine) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	abort := e.env.Heap.Local().Add(e.m.state.Off + 4*StateAbort)
	if err := e.env.Dev.Memset32(s, abort, 1, 1); err != nil {
		return fmt.Errorf("push: aborting the push-reduce kernel's waits: %w", err)
	}
	if err := e.ready.Release(s, uint32(epoch)); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	return nil
}

// Close has nothing of its own to release.
func (e *Engine) Close() error { return nil }
