package pull

import (
	"cmp"
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ring"
)

// Sent around the ring: a whole call whose blocks are at least
// Ring.MinBlock bytes, on one node of more than two GPUs, goes through the
// ring engine (intranode/ring) instead of being pulled: each rank's rows
// travel lr → lr+1 as SM stores into the next rank's FIFO slots, every
// rank on the way adding its own. On 4 H100s and 4 H200s SM stores to one
// peer move more than SM loads from three (hiercoll floors), so from large
// blocks the ring, for all its hops, ends sooner than the pull
// (benchmarks/RESULTS.md). A rank reads only its own input, wherever it
// lies (the symmetric input, a registered or a plain buffer: nothing is
// copied in), so ranks may mix them; only an input whose start is not
// 16-byte aligned, which the kernel would read element by element, is
// copied into the symmetric input first. The ring keeps its counts on the
// device, so its launches replay in CUDA graphs like the pull's.

// Ring is when and how whole calls go around the ring.
type Ring struct {
	// MinBlock is the smallest block (bytes of one destination's rows per
	// rank) sent around the ring: 0 takes DefaultRing's on one node of
	// more than two GPUs, negative none.
	MinBlock int64
	// Shape is the ring's FIFOs; a field left at 0 takes DefaultRing's.
	Shape ring.Shape
	// SMs is the device's SMs, which cap the default's channels (0:
	// unknown).
	SMs int
}

// DefaultRing is the ring on one node of more than two GPUs: from blocks
// of 8 MiB (on 4 H200s a copied-in input then reads 1.2 times as fast as
// the pull, which copies it in first, and the symmetric input 1-2%
// slower: the choice goes by size alone, and a plain buffer is what most
// callers pass), at the fastest shape measured there from 512 MiB of input
// per rank, 64 MiB of FIFOs per node peer; an engine whose largest block is
// below wideBlock takes narrowShape instead, a quarter of that, which
// measured the same at blocks of 16 and 32 MiB (benchmarks/RESULTS.md).
var DefaultRing = Ring{MinBlock: 8 << 20, Shape: ring.Shape{Channels: 128, Slots: 2, ChunkBytes: 256 << 10}}

var narrowShape = ring.Shape{Channels: 64, Slots: 2, ChunkBytes: 128 << 10}

const wideBlock = 128 << 20

// Resolved is r as an engine made for spec takes it: the defaults filled
// in, or never (the zero Ring) off one node of more than two GPUs or where
// no block reaches MinBlock.
func (r Ring) Resolved(spec intranode.Spec) Ring {
	if r.MinBlock == 0 {
		r.MinBlock = DefaultRing.MinBlock
	}
	block := int64(spec.MaxRows/spec.Place.Shape.World()) * spec.RowBytes()
	if r.MinBlock < 0 || spec.Place.Shape.Nodes != 1 || spec.LocalSize() < 3 || block < r.MinBlock {
		return Ring{}
	}
	d := DefaultRing.Shape
	if block < wideBlock {
		d = narrowShape
	}
	if r.Shape.Channels == 0 && r.SMs > 0 { // the default's channels, capped by the SMs
		d.Channels = min(d.Channels, r.SMs)
	}
	r.Shape = ring.ShapeOf(cmp.Or(r.Shape.Channels, d.Channels), cmp.Or(r.Shape.Slots, d.Slots), cmp.Or(r.Shape.ChunkBytes, d.ChunkBytes), r.SMs)
	return r
}

// ringed reports whether call goes around the ring.
func (e *Engine) ringed(call intranode.Call) bool {
	return e.ring != nil && int64(call.RowsPer)*e.env.RowBytes() >= e.m.rg.MinBlock
}

// ringIn is where the ring reads call's input: in place, or the symmetric
// input where the input's start is not 16-byte aligned (ringBegin copies
// it there).
func (e *Engine) ringIn(call intranode.Call) device.Ptr {
	if uint64(call.Input)%16 == 0 {
		return call.Input
	}
	return e.sym()
}

// ringBegin begins a call around the ring: its input copied into the
// symmetric input where ringIn says so (copyIn copies every block of an
// input that is not aligned: ownInPlace holds only for aligned ones).
func (e *Engine) ringBegin(s device.Stream, call intranode.Call) error {
	if e.ringIn(call) != call.Input {
		if err := e.copyIn(s, call, 0, call.RowsPer, 0); err != nil {
			return fmt.Errorf("pull: copying a misaligned input into the symmetric input for the ring: %w", err)
		}
	}
	return e.ring.Begin(s, call)
}

// ringStep is a node step around the ring, reading the input from ringIn.
func (e *Engine) ringStep(s device.Stream, step intranode.Step) (intranode.Done, error) {
	step.Input = e.ringIn(step.Call)
	return e.ring.Step(s, step)
}

// ringMake makes the ring on the engine's heap.
func (e *Engine) ringMake(ctx context.Context, env intranode.Env) (err error) {
	e.ring, err = e.m.ring.Make(ctx, env)
	return err
}
