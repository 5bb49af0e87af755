// Package nvls is the NVLS engine: the node's GPUs bind one buffer each to an NVLink
// multicast object (symm.NewMulticast), and each computes its block of a
// node step with one load-reduce per 16 bytes on the object's multicast
// address: the NVSwitch reads the block from every GPU and returns the sum,
// so no rank copies rows to a peer and no SM adds them.
//
// A call's input reaches the bound buffer by a local copy: each rank copies
// its whole input once into its own bound buffer (device memory to device
// memory on the same GPU, at HBM rate, several times NVLink's), the rows of
// destination rank g at g × stride. That is the cheapest route the API
// allows: ld_reduce reads only bound memory, and the caller's input is not
// bound (a GEMM producer could write straight into the bound buffer and
// skip the copy). stride is a block rounded up to the 16-byte vector of a
// load-reduce, so every block starts aligned; when a block is already a
// multiple of 16 bytes the copy is one, else one per block.
//
// Two node barriers on the existing signal words bracket the reads:
//   - before: every rank raises its arrival word (the next seq) in every
//     node peer's pad once its copy is done, and waits for every peer's:
//     all bound buffers hold the call's rows;
//   - after: every rank raises its ready word (the call's epoch) in every
//     peer's pad once its last load-reduce is done, and the next call waits
//     for every peer's before it overwrites its bound buffer (Close's
//     collective barrier covers the last call).
//
// It runs only when named and let through device.AllowMulticast's gate
// (DESIGN.md's safety rule): the context passes the gate's permit to the
// maker, and it is verified on the CPU backend's simulated multicast
// objects.
package nvls

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// Maker lays out and makes the NVLS engine.
type Maker struct {
	spec           intranode.Spec
	ready, arrived symm.Pad
	// Permit is device.AllowMulticast's permit, which the context got on
	// every rank before Make: no multicast driver call happens without it.
	Permit device.Permit
}

var _ intranode.Maker = (*Maker)(nil)

// NewMaker returns the NVLS engine's maker for spec.
func NewMaker(spec intranode.Spec) *Maker { return &Maker{spec: spec} }

// Prepare loads the NVLS reduce kernel.
func (m *Maker) Prepare(dev device.Device) error { return Prepare(dev, m.spec.DType) }

// AddTo lays out the ready and arrival words; the rows go to the buffer
// bound to the multicast object, which is not in the heap.
func (m *Maker) AddTo(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.ready = l.AddPad("ready", lws)
	m.arrived = l.AddPad("arrived", lws)
}

// Make binds this rank's buffer for calls of up to MaxRows rows to the node
// team's multicast object. It is collective over env.Comm (every rank
// calls it).
func (m *Maker) Make(ctx context.Context, env intranode.Env) (intranode.Engine, error) {
	if err := intranode.CheckMapped(env); err != nil {
		return nil, err
	}
	e := &Engine{env: env}
	place := env.Place
	e.ready = env.Heap.Signals(m.ready, env.Proto, intranode.ReadyLabel(place))
	e.arrived = env.Heap.Signals(m.arrived, env.Proto, func(_, src int) string {
		return "arrival of the block of " + intranode.LocalName(place, src)
	})
	world := place.Shape.World()
	size := int64(world) * e.stride(env.MaxRows/world)
	mc, err := symm.NewMulticast(ctx, env.Comm, env.Dev, m.Permit, place.NodeTeam(), size)
	if err != nil {
		return nil, fmt.Errorf("nvls: %w", err)
	}
	e.mc = mc
	return e, nil
}

// Engine is one rank's NVLS engine.
type Engine struct {
	env            intranode.Env
	ready, arrived symm.SignalPad
	mc             *symm.Multicast // this rank's part of the node's multicast object
	seq            uint32          // last arrival sequence number used
	last           uint32          // the epoch of the last call (0: none yet)
}

var _ intranode.Engine = (*Engine)(nil)

func (e *Engine) lws() int { return e.env.LocalSize() }

// stride is the distance between destination blocks in the bound buffer
// for calls of rowsPer rows per rank.
func (e *Engine) stride(rowsPer int) int64 {
	return (int64(rowsPer)*e.env.RowBytes() + Vector - 1) / Vector * Vector
}

// Begin enqueues on s the start of a call: the wait for every node peer to
// have finished the previous call's load-reduces, the copy of the M × N
// input into the bound buffer, and the barrier after which every bound
// buffer holds the call's rows.
func (e *Engine) Begin(s device.Stream, call intranode.Call) error {
	me := e.env.Place.LocalRank
	if e.last != 0 {
		for q := 0; q < e.lws(); q++ {
			if q != me {
				if err := e.ready.At(e.env.Place.Rank, q).Wait(s, e.last); err != nil {
					return err
				}
			}
		}
	}
	if err := e.copyToBound(s, call.Input, call.RowsPer); err != nil {
		return err
	}
	e.seq++
	for q := 0; q < e.lws(); q++ {
		if q != me {
			if err := e.arrived.At(e.env.Place.NodePeer(q), me).Raise(s, e.seq); err != nil {
				return fmt.Errorf("nvls: arrival to local rank %d: %w", q, err)
			}
		}
	}
	for q := 0; q < e.lws(); q++ {
		if q != me {
			if err := e.arrived.At(e.env.Place.Rank, q).Wait(s, e.seq); err != nil {
				return err
			}
		}
	}
	e.last = uint32(call.Epoch)
	return nil
}

// copyToBound copies the input's world blocks of rowsPer rows into the
// bound buffer at the stride: in one copy when the stride is the block's
// size.
func (e *Engine) copyToBound(s device.Stream, input device.Ptr, rowsPer int) error {
	block := int64(rowsPer) * e.env.RowBytes()
	stride := e.stride(rowsPer)
	world := e.env.Place.Shape.World()
	if stride == block {
		if err := e.env.Dev.Copy(s, e.mc.Local, input, int64(world)*block); err != nil {
			return fmt.Errorf("nvls: copy into the bound buffer: %w", err)
		}
		return nil
	}
	for g := 0; g < world; g++ {
		if err := e.env.Dev.Copy(s, e.mc.Local.Add(int64(g)*stride), input.Add(int64(g)*block), block); err != nil {
			return fmt.Errorf("nvls: copy of block %d into the bound buffer: %w", g, err)
		}
	}
	return nil
}

// Step enqueues on s the step's load-reduce: this rank's block of the rows
// destined to node step.Node, summed over the node's GPUs through the
// multicast address, into step.ReduceTo, on every SM.
func (e *Engine) Step(s device.Stream, step intranode.Step) (intranode.Done, error) {
	if !step.Whole() {
		return intranode.Done{}, fmt.Errorf("nvls: a step of rows [%d, %d) of %d: the NVLS engine moves whole blocks: %w",
			step.Row0, step.Row0+step.Rows, step.RowsPer, device.ErrInvalidArgument)
	}
	dest := step.Node*e.lws() + e.env.Place.LocalRank
	mc := e.mc.Addr.Add(int64(dest) * e.stride(step.RowsPer))
	grid := e.env.FinalGrid(e.env.Dev.Info().SMs)
	if err := LaunchReduce(e.env.Dev, s, e.env.DType, grid, step.ReduceTo, mc, int64(step.RowsPer)*int64(e.env.Cols)); err != nil {
		return intranode.Done{}, fmt.Errorf("nvls: reduce: %w", err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}

// End enqueues on s, after the call's last load-reduce, this rank's ready
// word (epoch) into every node peer's pad: the peers may overwrite their
// bound buffers.
func (e *Engine) End(s device.Stream, call intranode.Call) error {
	me := e.env.Place.LocalRank
	for q := 0; q < e.lws(); q++ {
		if q != me {
			if err := e.ready.At(e.env.Place.NodePeer(q), me).Raise(s, uint32(call.Epoch)); err != nil {
				return fmt.Errorf("nvls: end to local rank %d: %w", q, err)
			}
		}
	}
	return nil
}

// ReceiveRows is the buffer bound to the multicast object, where the
// rank's own rows go: rows × Cols elements for calls of rows rows.
func (e *Engine) ReceiveRows(rows int) (device.Ptr, int64) {
	return e.mc.Local, int64(rows) * e.env.RowBytes()
}

// ReleaseWaits ends every wait on this rank's ready and arrival words.
func (e *Engine) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	return errors.Join(e.ready.Release(s, uint32(epoch)), e.arrived.Release(s, e.seq))
}

// Close releases this rank's part of the multicast object (after a
// barrier: no peer may still read through it).
func (e *Engine) Close() error {
	if e.mc == nil {
		return nil
	}
	err := e.mc.Close()
	e.mc = nil
	return err
}
