package pull

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// Pulled by the copy engine: a whole call of a registered input or of the
// context's symmetric input (the peers' buffers, read in place) whose
// blocks are at least CopyEngine.MinBlock bytes. The receiving rank's copy
// engine reads its block from every peer's buffer chunk by chunk into
// landing slots (ceSlots per peer), on the copy stream, and the reduction
// stream sums each chunk's slots with the own rows into the output as soon
// as they landed. On two H200s the copy engine's reads keep 95% of their
// one-way rate with traffic both ways, where SM loads reach 85% of it
// (hiercoll floors), and beside the sums only where they read an
// allocation of their own: the symmetric input therefore lies apart from
// the heap that holds the landing slots (intranode.Env.InputHeap). The
// last two chunks of a block are cut in halves, and halves of halves, down
// to a 32nd of a chunk, so that the sum left after the last copy is short.
// The call's arrival is the pull kernel's, in a launch of one block that
// sums nothing, on the caller's stream before the copy stream forks from it:
// every peer's input is complete (its launch started after the work that
// wrote it), and its tag says the peers read the same way — a rank that
// pulls by the copy engine among peers that pull by the kernel (its peers
// copied their buffers in) traps there, and so do they, where each would
// otherwise wait for a handshake the other never makes. Reads done is a
// stream memory operation: done[src] = epoch (src finished reading this
// rank's input: the call ends only once every peer did). A caller's plain
// buffer is not pulled this way (it would first be copied in;
// benchmarks/RESULTS.md).

// CopyEngine is when and how whole calls are pulled by the copy engine.
type CopyEngine struct {
	// MinBlock is the smallest block (bytes of one destination's rows per
	// rank) pulled by the copy engine: 0 takes DefaultCopyEngine's on one
	// node of two GPUs (where it was measured) and none elsewhere,
	// negative none.
	MinBlock int64
	// Chunk is the bytes of one landing slot, rounded up to 16, and of
	// each copy (0: by size: a quarter of the block, at least 64 and at
	// most 128 MiB).
	Chunk int64
}

// DefaultCopyEngine is the copy engine's pulls on one node of two GPUs,
// where they measured faster than the SM pulls from blocks of 256 MiB (2
// H200s: not on 4, where the SM pulls measured faster; benchmarks/RESULTS.md
// has the floors of the copy engine's reads beside the sums).
var DefaultCopyEngine = CopyEngine{MinBlock: 256 << 20}

// chunkBySize is the chunk of a block of block bytes when CopyEngine.Chunk
// is 0: a quarter of it, between ceChunkLeast and ceChunkMost (of 32, 64
// and 128 MiB that chunk measured fastest at blocks of 256 MiB, 512 MiB and
// 1 GiB on 2 H200s). Variables for the tests.
func chunkBySize(block int64) int64 {
	return (min(max(block/4, ceChunkLeast), ceChunkMost) + 15) / 16 * 16
}

var ceChunkLeast, ceChunkMost int64 = 64 << 20, 128 << 20

// ceSlots is the landing slots per peer: a chunk landing while the one
// before it is summed, and one more.
const ceSlots = 3

// resolve is c with the defaults filled in for spec (MinBlock 0: never),
// and never where no block reaches MinBlock; the chunk (the slots' size)
// is at most a block.
func (c CopyEngine) resolve(spec intranode.Spec) CopyEngine {
	lws := spec.LocalSize()
	if c.MinBlock == 0 && lws == 2 && spec.Place.Shape.Nodes == 1 {
		c.MinBlock = DefaultCopyEngine.MinBlock
	}
	block := int64(spec.MaxRows/spec.Place.Shape.World()) * spec.RowBytes()
	if c.MinBlock <= 0 || lws < 2 || block < c.MinBlock {
		return CopyEngine{}
	}
	if c.Chunk <= 0 {
		c.Chunk = chunkBySize(block)
	}
	c.Chunk = (min(c.Chunk, block) + 15) / 16 * 16
	return c
}

// LandingBytes is the symmetric memory that the landing slots of c take in
// an engine made for spec: ceSlots × (GPUs per node − 1) chunks, or 0 where
// the copy engine's pulls are off.
func (c CopyEngine) LandingBytes(spec intranode.Spec) int64 {
	if r := c.resolve(spec); r.MinBlock > 0 {
		return r.landingBytes(spec.LocalSize())
	}
	return 0
}

// landingBytes is LandingBytes of a resolved c.
func (c CopyEngine) landingBytes(lws int) int64 { return int64(ceSlots*(lws-1)) * c.Chunk }

// ceLayout lays out the landing slots and the reads-done words.
func (m *Maker) ceLayout(l *symm.Layout) {
	lws := m.spec.LocalSize()
	m.ceLanding = l.Add("pull copy-engine landing slots", m.ce.landingBytes(lws))
	m.ceDone = l.AddPad("pull copy-engine reads done", lws)
}

// ceMake makes the engine's copy-engine words and events.
func (e *Engine) ceMake() error {
	if e.env.Streams == nil || len(e.env.Streams.Copy) == 0 {
		return fmt.Errorf("the copy engine's pulls need a copy and a reduction stream: %w", device.ErrInvalidArgument)
	}
	place, proto := e.env.Place, e.env.Proto
	e.ceDone = e.env.Heap.Signals(e.m.ceDone, proto, func(_, src int) string {
		return "reads done by " + intranode.LocalName(place, src)
	})
	for _, events := range []*[]device.Event{&e.ceLanded, &e.ceReduced} {
		for range ceSlots {
			ev, err := e.env.Dev.NewEvent()
			if err != nil {
				return err
			}
			*events = append(*events, ev)
		}
	}
	return nil
}

// cePull reports whether call is pulled by the copy engine: the
// symmetric input, or a registered input in allocations of whole large
// pages (others, which the copy engine read about a third slower on 2
// H200s, are pulled by the kernel).
func (e *Engine) cePull(call intranode.Call) bool {
	views, _ := e.views(call)
	return e.m.ce.MinBlock > 0 && views != 0 && (call.InputViews == 0 || call.InputWholePages) && !e.oneShot(call) &&
		int64(call.RowsPer)*e.env.RowBytes() >= e.m.ce.MinBlock
}

// ceBegin enqueues the call's arrival on s (the pull kernel's launch of
// no rows: its handshake in one block) and forks the copy and reduction
// streams after it.
func (e *Engine) ceBegin(s device.Stream, call intranode.Call) error {
	views, _ := e.views(call)
	if _, err := e.pull(s, 0, intranode.Step{Call: call}, views, 0, 0, true, false); err != nil {
		return fmt.Errorf("pull: the copy engine's arrival: %w", err)
	}
	e.ceK = 0
	return e.env.Streams.Fork(s)
}

// ceNext is the bytes of the chunk at c0 of a block: a whole chunk while
// two or more are left, then half of what is left, down to a 32nd of a
// chunk (16-byte multiples).
func ceNext(c0, block, chunk int64) int64 {
	left, least := block-c0, max(16, chunk/32/16*16)
	switch {
	case left >= 2*chunk:
		return chunk
	case left <= least:
		return left
	}
	return max(least, (left/2+15)/16*16)
}

// ceStep pulls step's block of this rank from every node peer's registered
// input chunk by chunk on the copy stream and sums each chunk on the
// reduction stream into step.ReduceTo.
func (e *Engine) ceStep(step intranode.Step) (intranode.Done, error) {
	lws, me, place := e.env.LocalSize(), e.env.Place.LocalRank, e.env.Place
	cp, r := e.env.Streams.Copy[0], e.env.Streams.Reduction
	rowBytes, es := e.env.RowBytes(), int64(e.env.DType.Size())
	_, peers := e.views(step.Call)
	block := int64(step.RowsPer) * rowBytes
	off := int64((step.Node*lws+me)*step.RowsPer) * rowBytes
	slotBytes := e.m.ce.Chunk
	chunk := slotBytes
	if e.m.ceBySize {
		chunk = min(chunk, chunkBySize(block))
	}
	// landing is slot's place for the i-th peer after this rank (i = 1 ..
	// lws-1); the reduce reads lws chunks at a stride of a slot from where
	// i = 0 would be, the own rows coming from SelfSrc instead.
	landing := func(slot, i int) device.Ptr {
		return e.env.Heap.Local().Add(e.m.ceLanding.Off + int64(slot*(lws-1)+i-1)*slotBytes)
	}
	grid := intranode.BlocksPerSM * e.env.ReductionSMs
	for c0, n := int64(0), int64(0); c0 < block; c0 += n {
		n = ceNext(c0, block, chunk)
		slot := e.ceK % ceSlots
		if e.ceK >= ceSlots { // the slot's last sum read it
			if err := cp.WaitEvent(e.ceReduced[slot]); err != nil {
				return intranode.Done{}, err
			}
		}
		for i := 1; i < lws; i++ {
			q := (me + i) % lws
			if err := e.env.Dev.Copy(cp, landing(slot, i), peers[q].Add(off+c0), n); err != nil {
				return intranode.Done{}, fmt.Errorf("pull: copying from local rank %d: %w", q, err)
			}
		}
		if err := e.ceLanded[slot].Record(cp); err != nil {
			return intranode.Done{}, err
		}
		if err := r.WaitEvent(e.ceLanded[slot]); err != nil {
			return intranode.Done{}, err
		}
		b := kernels.Blocks{Src: landing(slot, 1).Add(-slotBytes), Stride: slotBytes / es, N: lws, Count: n / es, Self: 0,
			SelfSrc: peers[me].Add(off + c0)}
		if err := kernels.LaunchReduce(e.env.Dev, r, e.env.DType, grid, step.ReduceTo.Add(c0), b); err != nil {
			return intranode.Done{}, fmt.Errorf("pull: summing a pulled chunk: %w", err)
		}
		if err := e.ceReduced[slot].Record(r); err != nil {
			return intranode.Done{}, err
		}
		e.ceK++
	}
	if step.Last {
		for q := range lws {
			if q == me {
				continue
			}
			if err := e.ceDone.At(place.NodePeer(q), me).Raise(cp, uint32(step.Epoch)); err != nil {
				return intranode.Done{}, fmt.Errorf("pull: telling local rank %d its input was read: %w", q, err)
			}
		}
	}
	return intranode.Done{Landed: cp, Reduced: r}, nil
}

// ceEnd has s wait until every node peer read this rank's input, and for
// the engine's streams.
func (e *Engine) ceEnd(s device.Stream, call intranode.Call) error {
	me := e.env.Place.LocalRank
	for q := range e.env.LocalSize() {
		if q == me {
			continue
		}
		if err := e.ceDone.At(e.env.Place.Rank, q).WaitLast(s, uint32(call.Epoch)); err != nil {
			return fmt.Errorf("pull: waiting for local rank %d's reads: %w", q, err)
		}
	}
	return e.env.Streams.Merge(s)
}
