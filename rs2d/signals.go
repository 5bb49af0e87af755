package rs2d

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// Signals are the GEMM signals of one call (with OverlapWithGEMM): one word
// per destination rank in this rank's memory, and the value that releases
// the call. A producer raises the word of destination dest once the rows
// for dest are complete, with Raise on a stream or by storing Value to
// Addr(dest) from a kernel of its own, ideally in ConsumptionOrder.
type Signals struct {
	c      *Context
	Value  uint32
	serial uint64 // the call's place among the context's calls
}

// NextSignals returns the signals of the next call (the call a Prepare or
// ReduceScatter made now would be). Take them before enqueuing that call;
// raise them whenever the rows are ready.
func (c *Context) NextSignals() Signals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signals()
}

func (c *Context) signals() Signals {
	return Signals{c: c, Value: uint32(c.proto.Next(c.epoch)), serial: c.serial + 1}
}

// Clear enqueues on s the reset of this rank's GEMM signal words (early ones
// too), for a producer of a context made with Config.Graphs that raised a
// call's signals and then gave the call up (every call there has the same
// value, so a word left raised would release the next call early): s must
// be ordered after the raises. Nothing otherwise: the call's value is passed
// over instead (Call.Skip).
func (g Signals) Clear(s device.Stream) error {
	if g.c.proto != symm.Replayable {
		return nil
	}
	return g.c.gemm.Clear(s)
}

// signal is destination dest's GEMM word (early: its early word).
func (g Signals) signal(dest int, early bool) (symm.Signal, error) {
	if world := g.c.place.Shape.World(); dest < 0 || dest >= world {
		return symm.Signal{}, fmt.Errorf("rs2d: signal for rank %d of %d: %w", dest, world, device.ErrInvalidArgument)
	}
	if early {
		return g.c.gemm.Early(dest), nil
	}
	return g.c.gemm.Signal(dest, 0), nil
}

// Addr is the device address of the signal word of destination rank dest
// (of its first segment), for a producer kernel of the caller's own.
func (g Signals) Addr(dest int) (device.Ptr, error) {
	sig, err := g.signal(dest, false)
	return sig.Addr(), err
}

// Segments is how many signal words each destination's rows come in.
func (g Signals) Segments() int { return g.c.gemm.Segments() }

// SegmentRows is the row range [r0, r1), within the block of each
// destination of a call of m rows, of segment j (empty for a segment past
// the block's rows, which is never waited for).
func (g Signals) SegmentRows(m, j int) (r0, r1 int) {
	return intranode.SegmentRows(m/g.c.place.Shape.World(), g.Segments(), j)
}

// SegmentAddr is the device address of the signal word of segment j of
// destination rank dest.
func (g Signals) SegmentAddr(dest, j int) (device.Ptr, error) {
	if _, err := g.signal(dest, false); err != nil {
		return 0, err
	}
	if j < 0 || j >= g.Segments() {
		return 0, fmt.Errorf("rs2d: signal segment %d of %d: %w", j, g.Segments(), device.ErrInvalidArgument)
	}
	return g.c.gemm.Signal(dest, j).Addr(), nil
}

// RaiseSegment enqueues on s the write of the signal of segment j of
// destination rank dest.
func (g Signals) RaiseSegment(s device.Stream, dest, j int) error {
	if _, err := g.SegmentAddr(dest, j); err != nil {
		return err
	}
	return g.c.gemm.Signal(dest, j).Raise(s, g.Value)
}

// Raise enqueues on s the writes of the signals of destination rank dest
// (every segment of its rows).
func (g Signals) Raise(s device.Stream, dest int) error {
	if _, err := g.signal(dest, false); err != nil {
		return err
	}
	for j := 0; j < g.Segments(); j++ {
		if err := g.c.gemm.Signal(dest, j).Raise(s, g.Value); err != nil {
			return err
		}
	}
	return nil
}

// EarlyRows is how many rows of the first block in consumption order
// (ConsumptionOrder()[0]) a producer of a call of m rows raises the early
// signal after (RaiseEarly), before the rest of the block and its signal:
// half of them when the context splits the first block and has node peers
// to send to, else 0.
func (g Signals) EarlyRows(m int) int { return g.c.gemm.EarlyRows(m / g.c.place.Shape.World()) }

// EarlyAddr is the device address of the early signal word of destination
// rank dest, for a producer kernel of the caller's own.
func (g Signals) EarlyAddr(dest int) (device.Ptr, error) {
	sig, err := g.signal(dest, true)
	return sig.Addr(), err
}

// RaiseEarly enqueues on s the write of the early signal of destination
// rank dest: the first EarlyRows rows of its block are complete.
func (g Signals) RaiseEarly(s device.Stream, dest int) error {
	sig, err := g.signal(dest, true)
	if err != nil {
		return err
	}
	return sig.Raise(s, g.Value)
}
