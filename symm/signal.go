package symm

import (
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/device"
)

// Protocol is how a context's signal words tell one call from the next.
// Stream waits (cuStreamWaitValue32) compare against constants fixed when
// the wait is enqueued, and a CUDA graph replays those constants, so the
// choice decides whether calls can be captured.
//
// Kernels keep their own counters on the device (their call state, see
// the push engine, intranode/push), whatever the protocol: a kernel reads
// what it compares against from memory, so it replays correctly under both.
type Protocol int

const (
	// Growing: every call's words carry a value that grows with each call
	// (Epoch.Next, and sequence numbers that keep counting), and no word is
	// ever reset; a failed or rejected call leaves nothing a later call
	// could take for its own. The values come from the host, so a captured
	// call would replay stale ones: calls cannot be captured.
	Growing Protocol = iota
	// Replayable: every call's words carry the same values (the epoch
	// ReplayEpoch, sequence numbers from 1 within the call), and the owner
	// of each word resets it to 0 on the device right after the call's last
	// wait on it (Signal.WaitLast), before the work that wait lets go. Every
	// writer of the word in the next call is ordered after that work (by the
	// ready flags and the rail credits), so no write of the next call can be
	// overtaken by the reset. Calls can be captured in a CUDA graph and
	// replayed, and mixed with calls made directly.
	Replayable
)

func (p Protocol) String() string {
	switch p {
	case Growing:
		return "growing"
	case Replayable:
		return "replayable"
	}
	return fmt.Sprintf("protocol(%d)", int(p))
}

// ReplayEpoch is the epoch of every call under Replayable.
const ReplayEpoch Epoch = 1

// Next is the epoch of the call after one of epoch e.
func (p Protocol) Next(e Epoch) Epoch {
	if p == Replayable {
		return ReplayEpoch
	}
	return e.Next()
}

// Restart is where a call's sequence numbers (arrivals of several chunks and
// node steps on one word) count on from, given the last one used: under
// Replayable every call counts from 1 again.
func (p Protocol) Restart(last uint32) uint32 {
	if p == Replayable {
		return 0
	}
	return last
}

// Epoch numbers the calls of a collective context: the value a call's
// signal words carry. Under Growing, words only grow (waits compare
// cyclically), so no call ever resets one, and a failed call leaves nothing
// a later call could take for its own. Next is the wrap rule.
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
	dev   device.Device
	proto Protocol
	Word  device.Word
}

// Addr is the word's device address here.
func (g Signal) Addr() device.Ptr { return g.Word.Addr }

// Raise enqueues on s the write of v into the word, after s's earlier work.
func (g Signal) Raise(s device.Stream, v uint32) error { return g.dev.WriteValue32(s, g.Word.Addr, v) }

// Wait makes s wait until the word reaches v (cyclically: (int32)(w-v) >= 0).
// Under Replayable it must not be the call's last wait on the word (see
// WaitLast).
func (g Signal) Wait(s device.Stream, v uint32) error {
	return g.dev.WaitValue32(s, g.Word, device.GEQ, v)
}

// WaitLast is Wait for the call's last wait on the word; under Replayable
// the owner then resets the word to 0 on s, before anything s does next.
// Only the word's owner (the rank whose pad holds it) calls it.
func (g Signal) WaitLast(s device.Stream, v uint32) error {
	if err := g.Wait(s, v); err != nil {
		return err
	}
	return g.Reset(s)
}

// Reset enqueues on s, under Replayable, the write of 0 into the word
// (nothing under Growing, whose words are never reset).
func (g Signal) Reset(s device.Stream) error {
	if g.proto != Replayable {
		return nil
	}
	if err := g.dev.WriteValue32(s, g.Word.Addr, 0); err != nil {
		return fmt.Errorf("symm: resetting %s: %w", g.Word, err)
	}
	return nil
}

// SignalPad is a pad of signal words on every rank, with what word i of
// owner's pad means (for timeouts).
type SignalPad struct {
	heap  *Heap
	pad   Pad
	proto Protocol
	label func(owner, i int) string
}

// Signals returns the signal words of pad p under protocol proto, labelled
// by label(owner, i).
func (h *Heap) Signals(p Pad, proto Protocol, label func(owner, i int) string) SignalPad {
	return SignalPad{heap: h, pad: p, proto: proto, label: label}
}

// At is word i of owner's pad (owner must be mapped here).
func (p SignalPad) At(owner, i int) Signal {
	return Signal{dev: p.heap.dev, proto: p.proto, Word: device.Word{Addr: p.heap.Word(owner, p.pad, i), Label: p.label(owner, i)}}
}

// Words is the number of words in each rank's pad.
func (p SignalPad) Words() int { return p.pad.Words }

// Fill writes v into every word of this rank's own pad, synchronously: for
// words that start raised (the rail's credits under Replayable), before any
// peer can use them.
func (p SignalPad) Fill(v uint32) error {
	b := make([]byte, 4*p.pad.Words)
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if err := p.heap.dev.CopyToDevice(p.heap.Word(p.heap.rank, p.pad, 0), b); err != nil {
		return fmt.Errorf("symm: filling %s: %w", p.pad.Name, err)
	}
	return nil
}

// Release enqueues on s (a stream of its own, not a stuck one) the writes
// that end every wait on this rank's own words for any value up to 2^30
// past last (under Replayable, pass 0: every call's values are small): the
// way out when a peer is gone and work is stuck waiting for it (the results
// are garbage, and the words must not be used again).
func (p SignalPad) Release(s device.Stream, last uint32) error {
	const ahead = 1 << 30
	if err := p.heap.dev.Memset32(s, p.heap.Word(p.heap.rank, p.pad, 0), last+ahead, int64(p.pad.Words)); err != nil {
		return fmt.Errorf("symm: releasing the waits on %s: %w", p.pad.Name, err)
	}
	return nil
}
