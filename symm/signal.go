package symm

import (
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/device"
)

// Epoch numbers the calls of a collective context: the value a call's
// signal words carry. Words only grow (waits compare cyclically), so no call
// ever resets one, and a failed call leaves nothing a later call could take
// for its own. Next is the wrap rule.
type Epoch uint32

// Next is the epoch of the call after one of epoch e. Epochs alternate in
// parity (the rail's two receive-buffer sets depend on it) and never come
// back to 0, what pads start at: at the wrap, 2^32-1 is followed by 2
// (waits compare cyclically, so 2 is still ahead).
func (e Epoch) Next() Epoch {
	if e == math.MaxUint32 {
		return 2
	}
	return e + 1
}

// Parity is the receive-buffer set a call of epoch e uses (0 or 1).
func (e Epoch) Parity() int { return int(e & 1) }

// Signal is one 32-bit signal word of the symmetric heap as seen from this
// rank, with the label a timeout names it by. Its owner waits on it with a
// stream wait-value; any rank that maps it raises it with a stream
// write-value (or a kernel's store to Addr).
type Signal struct {
	dev  device.Device
	Word device.Word
}

// Addr is the word's device address here.
func (g Signal) Addr() device.Ptr { return g.Word.Addr }

// Raise enqueues on s the write of v into the word, after s's earlier work.
func (g Signal) Raise(s device.Stream, v uint32) error { return g.dev.WriteValue32(s, g.Word.Addr, v) }

// Wait makes s wait until the word reaches v (cyclically: (int32)(w-v) >= 0).
func (g Signal) Wait(s device.Stream, v uint32) error {
	return g.dev.WaitValue32(s, g.Word, device.GEQ, v)
}

// SignalPad is a pad of signal words on every rank, with what word i of
// owner's pad means (for timeouts).
type SignalPad struct {
	heap  *Heap
	pad   Pad
	label func(owner, i int) string
}

// Signals returns the signal words of pad p, labelled by label(owner, i).
func (h *Heap) Signals(p Pad, label func(owner, i int) string) SignalPad {
	return SignalPad{heap: h, pad: p, label: label}
}

// At is word i of owner's pad (owner must be mapped here).
func (p SignalPad) At(owner, i int) Signal {
	return Signal{dev: p.heap.dev, Word: device.Word{Addr: p.heap.Word(owner, p.pad, i), Label: p.label(owner, i)}}
}

// Words is the number of words in each rank's pad.
func (p SignalPad) Words() int { return p.pad.Words }

// Release enqueues on s (a stream of its own, not a stuck one) the writes
// that end every wait on this rank's own words for any value up to 2^30
// past last: the way out when a peer is gone and work is stuck waiting for
// it (the results are garbage, and the words must not be used again).
func (p SignalPad) Release(s device.Stream, last uint32) error {
	const ahead = 1 << 30
	if err := p.heap.dev.Memset32(s, p.heap.Word(p.heap.rank, p.pad, 0), last+ahead, int64(p.pad.Words)); err != nil {
		return fmt.Errorf("symm: releasing the waits on %s: %w", p.pad.Name, err)
	}
	return nil
}
