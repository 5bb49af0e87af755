// Package ce is the copy engine: the intra-node engine that moves rows with
// the GPU's copy engines, no SMs, which suits overlap with a GEMM that holds
// them.
//
// A node step: every rank copies its rows for each node peer into that
// peer's scatter buffer in rank-swizzle order (intranode.RankSwizzle), on
// the copy stream, raising the peer's arrival word after each copy; the
// reduction stream waits for the lws-1 arrivals and sums them with the own
// block, read straight from the input, on a bounded number of SMs
// (kernels.LaunchReduce). With GEMM overlap each copy waits for its
// destination's GEMM signal, paced so each GPU receives one block at a time
// (scatter.go); on one node the producer's SMs may push the end of the last
// peer's block (help.go).
//
// Signal words, all in the pad of the rank that waits on them:
//   - ready[src]   = epoch: src has finished the previous call and may receive.
//   - arrived[src] = seq: src's block of the (step, chunk) numbered seq landed.
//   - permit[dest] = seq (in the sender's pad): dest has received the block
//     of the rank that sends to it one step earlier (pacing, scatter.go).
package ce

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// Maker lays out and makes the copy engine.
type Maker struct {
	spec                    intranode.Spec
	ready, arrived, permits symm.Pad
	scatter                 symm.Region // MaxRows × Cols elements: one region of M_per_node rows per node step
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the copy engine's maker for spec.
func NewMaker(spec intranode.Spec) *Maker { return &Maker{spec: spec} }

// Prepare loads the reduce kernel.
func (m *Maker) Prepare(dev device.Device) error { return kernels.Prepare(dev, m.spec.DType) }

// AddTo lays out the ready, arrival and permit pads and the scatter buffer.
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.ready = l.AddPad("ready", lws)
	m.arrived = l.AddPad("arrived", lws)
	m.permits = l.AddPad("permits", lws)
	m.scatter = l.Add("scatter", int64(m.spec.MaxRows)*m.spec.RowBytes())
}

// Make builds the engine on env's heap.
func (m *Maker) Make(_ context.Context, env intranode.Env) (intranode.Engine, error) {
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	if env.Streams == nil || len(env.Streams.Copy) == 0 {
		return nil, fmt.Errorf("ce: the copy engine needs a copy and a reduction stream: %w", device.ErrInvalidArgument)
	}
	place, heap, proto := env.Place, env.Heap, env.Proto
	e := &Engine{env: env, scatterBuf: m.scatter}
	e.ready = heap.Signals(m.ready, proto, intranode.ReadyLabel(place))
	e.arrived = heap.Signals(m.arrived, proto, func(_, src int) string {
		return "arrival of the block of " + intranode.LocalName(place, src)
	})
	e.permits = heap.Signals(m.permits, proto, func(owner, dest int) string {
		next := (place.LocalRank + 1) % place.Shape.LocalSize
		return fmt.Sprintf("permit from %s to send to rank %d", intranode.LocalName(place, next), place.NodePeer(dest))
	})
	return e, nil
}

// Engine is one rank's copy engine.
type Engine struct {
	env        intranode.Env
	scatterBuf symm.Region

	ready, arrived, permits symm.SignalPad

	seq   uint32 // last arrival sequence number used (same on every rank)
	trace *tracer

	// Help (help.go): the rows at the end of the last peer's block that the
	// producer's SMs push for the call of epoch helpEpoch (0: none), and the
	// event that marks their push done.
	helpRows  int
	helpEpoch symm.Epoch
	helped    device.Event
}

var _ intranode.Engine = (*Engine)(nil)

func (e *Engine) lws() int { return e.env.LocalSize() }

func (e *Engine) overlap() bool { return e.env.Gemm != nil }

func (e *Engine) copyStream() device.Stream { return e.env.Streams.Copy[0] }

// Begin announces this rank's readiness to every node peer and forks the
// copy, reduction and p2p streams from s.
func (e *Engine) Begin(s device.Stream, call intranode.Call) error {
	me := e.env.Place.LocalRank
	for lr := 0; lr < e.lws(); lr++ {
		if err := e.ready.At(e.env.Place.NodePeer(lr), me).Raise(s, uint32(call.Epoch)); err != nil {
			return fmt.Errorf("ce: announcing readiness to local rank %d: %w", lr, err)
		}
	}
	return e.env.Streams.Fork(s)
}

// Step enqueues the step's copies on the copy stream and its reduce on the
// reduction stream.
func (e *Engine) Step(_ device.Stream, step intranode.Step) (intranode.Done, error) {
	if !step.Whole() {
		return intranode.Done{}, fmt.Errorf("ce: a step of rows [%d, %d) of %d: the copy engine moves whole blocks: %w",
			step.Row0, step.Row0+step.Rows, step.RowsPer, device.ErrInvalidArgument)
	}
	seqs, err := e.scatter(e.copyStream(), step)
	if err != nil {
		return intranode.Done{}, err
	}
	r := e.env.Streams.Reduction
	if err := e.reduce(r, step, seqs); err != nil {
		return intranode.Done{}, err
	}
	return intranode.Done{Landed: e.copyStream(), Reduced: r}, nil
}

// The chunks cut by size (Chunks): at least minChunk bytes each (the copy
// engine needs about 1 MiB to reach its rate), at most maxChunks.
const (
	minChunk  = 4 << 20
	maxChunks = 8
)

// Chunks cuts each block into asked chunks, or by size, of whole rows.
func (e *Engine) Chunks(asked, rowsPer int, rowBytes int64) int {
	if asked == 0 {
		asked = int(min(int64(rowsPer)*rowBytes/minChunk, maxChunks))
	}
	return max(1, min(asked, rowsPer))
}

// End merges the engine's streams back into s.
func (e *Engine) End(s device.Stream, _ intranode.Call) error { return e.env.Streams.Merge(s) }

// reduceGrid is the grid of step's reduce: the reduce budget beside a GEMM,
// or every SM for the own node's step with GEMM overlap (it reduces after
// the own GEMM block, the last one in consumption order: the producer is
// done and the SMs are free).
func (e *Engine) reduceGrid(step intranode.Step) int {
	if e.overlap() && step.Node == e.env.Place.Node {
		return e.env.FinalGrid(e.env.Dev.Info().SMs)
	}
	return e.env.ReductionSMs * intranode.BlocksPerSM
}

// ReceiveRows is this rank's scatter buffer, where its node peers copy
// their rows: rows × Cols elements for calls of rows rows.
func (e *Engine) ReceiveRows(rows int) (device.Ptr, int64) {
	return e.env.Heap.Local().Add(e.scatterBuf.Off), int64(rows) * e.env.RowBytes()
}

// ReleaseWaits ends every wait on this rank's ready, arrival and permit
// words.
func (e *Engine) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	for _, w := range []struct {
		pad  symm.SignalPad
		last uint32
	}{
		{e.ready, uint32(epoch)},
		{e.arrived, e.seq},
		{e.permits, e.seq},
	} {
		if err := w.pad.Release(s, w.last); err != nil {
			return fmt.Errorf("ce: %w", err)
		}
	}
	return nil
}

// segments is how many GEMM signals each destination's rows come in.
func (e *Engine) segments() int {
	if !e.overlap() {
		return 1
	}
	return e.env.Gemm.Segments()
}
