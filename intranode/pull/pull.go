// Package pull is the pull-reduce engine: a node step of ReduceScatter2D as
// one kernel in which each rank reads its own row block from every node
// peer's symmetric input, sums it in fp32 (int32 exact) and writes its output
// once. Nothing is pushed to a peer and there is no scatter buffer to read
// back, so each byte crosses NVLink once and no second pass follows.
//
// The rows must lie in the context's symmetric input (intranode.Env.Input,
// the same offset on every rank): a caller writes them there itself (zero
// copy), or Begin copies them in first. Two handshakes inside the kernel
// guard the input (pull.cu): a rank reads a peer's input only after the
// peer's launch started, and a call's last launch ends only after every
// peer finished reading this rank's input, so whatever follows it on the
// stream may overwrite it.
//
//	rank r of node, step cur:  out = Σ_q input_q[rows of (cur, r)]   q = 0..lws-1
//
// Its words: the handshake flags (two sets of MaxBlocks × lws) and the
// kernel's call state, from which it takes the values it waits for, so it
// needs no reset under either signal protocol.
//
// Files: pull.go (layout and driver), pull.cu (kernel), kernel.go (launch and
// Go twin), pull_test.go.
package pull

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// Maker lays out and makes the pull engine.
type Maker struct {
	spec         intranode.Spec
	flags, state symm.Pad
	peerTable    symm.Region
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the pull engine's maker for spec.
func NewMaker(spec intranode.Spec) *Maker { return &Maker{spec: spec} }

// Prepare loads the kernel for the spec's dtype and node size.
func (m *Maker) Prepare(dev device.Device) error {
	return Prepare(dev, m.spec.DType, m.spec.LocalSize())
}

// AddTo lays out the handshake flags, the call state and the peer table
// (the symmetric input is the context's).
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.flags = l.AddPad("pull flags", 2*MaxBlocks*lws)
	m.state = l.AddPad("pull call state", stateWords)
	m.peerTable = l.Add("pull peer table", int64(lws)*8)
}

// Make builds the engine on env's heap, which must hold a symmetric input.
func (m *Maker) Make(_ context.Context, env intranode.Env) (intranode.Engine, error) {
	lws := env.LocalSize()
	switch {
	case lws > MaxLocalSize:
		return nil, fmt.Errorf("pull: %d GPUs per node, at most %d: %w", lws, MaxLocalSize, device.ErrNotSupported)
	case env.Input.Size < int64(env.MaxRows)*env.RowBytes():
		return nil, fmt.Errorf("pull: a symmetric input of %d bytes, want %d: %w", env.Input.Size, int64(env.MaxRows)*env.RowBytes(), device.ErrInvalidArgument)
	}
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	if err := intranode.WritePeerTable(env, m.peerTable); err != nil {
		return nil, err
	}
	return &Engine{env: env, m: m}, nil
}

// Engine is one rank's pull engine.
type Engine struct {
	env intranode.Env
	m   *Maker
}

var _ intranode.Engine = (*Engine)(nil)

// Grid is the kernel's blocks for count elements on a budget of sms SMs
// (one block each): no more than there are vectors for.
func Grid(rowBytes int64, rows, sms int) int {
	vectors := rowBytes * int64(rows) / 16
	need := int(max(1, (vectors+Block-1)/Block))
	return max(1, min(sms, need, MaxBlocks))
}

// Begin copies the call's rows into the symmetric input, unless the caller
// wrote them there (call.Input is the input region).
func (e *Engine) Begin(s device.Stream, call intranode.Call) error {
	sym := e.env.Heap.Local().Add(e.env.Input.Off)
	if call.Input == sym {
		return nil
	}
	bytes := int64(call.RowsPer) * int64(e.env.Place.Shape.World()) * e.env.RowBytes()
	if err := e.env.Dev.Copy(s, sym, call.Input, bytes); err != nil {
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
	row := int64((step.Node*lws+me)*step.RowsPer + step.Row0)
	p := launch{
		Peers:    e.env.Heap.Local().Add(e.m.peerTable.Off),
		Off:      e.env.Input.Off + row*rowBytes,
		Out:      step.ReduceTo,
		Count:    int64(step.Rows) * int64(e.env.Cols),
		FlagsOff: e.m.flags.Off,
		LWS:      lws,
		Me:       me,
		State:    e.env.Heap.Local().Add(e.m.state.Off),
	}
	if step.First {
		p.Phases |= phaseArrive
	}
	if step.Last {
		p.Phases |= phaseDone
	}
	grid := Grid(rowBytes, step.Rows, e.env.ReductionSMs)
	if err := run(e.env.Dev, s, e.env.DType, grid, p); err != nil {
		return intranode.Done{}, fmt.Errorf("pull: node step %d: %w", step.Node, err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}

// End does nothing: the last step's kernel ends the call's handshakes.
func (e *Engine) End(device.Stream, intranode.Call) error { return nil }

// ReleaseWaits enqueues on s the abort word: every wait of the kernel ends.
func (e *Engine) ReleaseWaits(s device.Stream, _ symm.Epoch) error {
	abort := e.env.Heap.Local().Add(e.m.state.Off + 4*stateAbort)
	if err := e.env.Dev.Memset32(s, abort, 1, 1); err != nil {
		return fmt.Errorf("pull: aborting the kernel's waits: %w", err)
	}
	return nil
}

// Close releases nothing: the engine's words are in the context's heap.
func (e *Engine) Close() error { return nil }
