package rs2d

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internal/tune"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// Memory is the device memory of a context's buffers on each rank, which
// Config.MaxSymmetricBytes bounds. With e the element size, lws the GPUs
// per node and B(r) = r × N × e rounded up to 256 bytes:
//
//	direct path: Node = MaxM × N × e (the scatter buffer) + pads
//	             Rail = 3 or 4 × nnodes × B(MaxM/world) + pads   (nnodes > 1)
//	ring:        Node = channels × (lws−1) × slots × chunk + pads
//	             Rail = 3 or 4 × nnodes × B(RailRows) + pads     (nnodes > 1)
//
// The pads are a few KiB of signal words. The rail's three sets are a
// staging block per node and two receive sets (by call parity); the IPC
// transport adds two 256-byte pads, NVSHMEM a 256-byte pad and, when it
// stages its puts, one more set. Rail counts all of it for the transport
// configured, and for Auto the most any transport it may pick takes
// (internode.RailBytes). Under a bound the ring's rail moves each call in
// rounds of RailRows rows per destination block, so that its buffers stay
// bounded too.
type Memory struct {
	Engine Engine // the path: EngineRing, or the direct path's engine
	// Node is the node stage's symmetric heap: the scatter buffer or the
	// ring's FIFOs, and every signal pad; with the NVLS engine, also the
	// buffer bound to its multicast object (in whole 2 MiB granules).
	Node int64
	// Rail is the rail stage's buffers (0 on one node): with Transport
	// Auto, the most that any transport Auto may pick takes (NVSHMEM
	// across hosts stages its puts in a fourth set), so that a bound holds
	// whichever it picks.
	Rail int64
	// RailRows is the rows of each destination's block that one rail
	// round carries: MaxM/world (one round per call) unless the ring
	// rounds a call under a bound.
	RailRows int
	// Ring is the ring's FIFO shape (zero on the direct path).
	Ring intranode.RingShape
}

// Total is the memory per rank.
func (m Memory) Total() int64 { return m.Node + m.Rail }

func (m Memory) String() string {
	s := fmt.Sprintf("%s per rank (%v: node stage %s", sizeOf(m.Total()), m.Engine, sizeOf(m.Node))
	if m.Engine == EngineRing {
		s += fmt.Sprintf(", %d channels × %d slots of %s per peer", m.Ring.Channels, m.Ring.Slots, sizeOf(m.Ring.ChunkBytes))
	}
	if m.Rail > 0 {
		s += fmt.Sprintf("; rail %s, %d rows per round", sizeOf(m.Rail), m.RailRows)
	}
	return s + ")"
}

func sizeOf(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// The ring's default shape, and the smallest chunk it shrinks to under a
// bound.
const (
	defaultRingChannels = 16
	defaultRingSlots    = 2
	defaultRingChunk    = 128 << 10
	minRingChunk        = 4 << 10
)

// MemoryOf is the path New takes for cfg on a world of shape whose devices
// have sms SMs (0: unknown), with the tuning ctx carries, and its memory
// per rank; or the error New would give for cfg (a bound that even the
// ring exceeds, for one).
func MemoryOf(ctx context.Context, cfg Config, shape bootstrap.Shape, sms int) (Memory, error) {
	if shape.Nodes < 1 || shape.LocalSize < 1 {
		return Memory{}, fmt.Errorf("rs2d: world of %d nodes × %d GPUs: %w", shape.Nodes, shape.LocalSize, device.ErrInvalidArgument)
	}
	_, mem, err := newPlanner(ctx, cfg, symm.Place{Shape: shape}, sms)
	return mem, err
}

// newPlanner validates cfg, fills in its defaults and picks its path: the
// planner carries the Config in effect (the engine resolved).
func newPlanner(ctx context.Context, cfg Config, place symm.Place, sms int) (planner, Memory, error) {
	knobs := tune.From(ctx)
	if err := cfg.validate(place.Shape.World(), knobs); err != nil {
		return planner{}, Memory{}, err
	}
	asked := cfg.Engine
	p := planner{cfg: cfg.withDefaults(), place: place, knobs: knobs, sms: sms}
	mem, err := p.choose(asked)
	if err != nil {
		return planner{}, Memory{}, err
	}
	p.cfg.Engine = mem.Engine
	if p.cfg.Graphs && (mem.Engine == EngineRing || mem.Engine == EngineNVLS) && place.Shape.World() > 1 {
		return planner{}, Memory{}, fmt.Errorf("rs2d: the %v engine does not replay in CUDA graphs (Config.Graphs): %w", mem.Engine, device.ErrNotSupported)
	}
	return p, mem, nil
}

// planner computes both paths' memory for a configuration on a world of
// place's shape.
type planner struct {
	cfg   Config
	place symm.Place
	knobs tune.Knobs
	sms   int // the device's SMs (channels are capped by them)
}

func (p planner) rowBytes() int64 { return int64(p.cfg.N) * int64(p.cfg.DType.Size()) }

// nodeLayout lays out the node stage's heap: the direct path's scatter
// buffer, or the ring's FIFOs of shape ring. New allocates exactly this.
func (p planner) nodeLayout(ring *intranode.RingShape) (*symm.Layout, intranode.Buffers) {
	var l symm.Layout
	buf := intranode.Buffers{Segments: p.knobs.Segments}
	switch {
	case p.cfg.Engine == EngineNVLS:
		buf.AddTo(&l, p.place, 0) // the rows go to the buffer bound to the multicast object
	case p.place.Shape.World() == 1:
		buf.AddTo(&l, p.place, 0) // a call is one device copy
	case ring == nil:
		buf.AddTo(&l, p.place, int64(p.cfg.MaxM)*p.rowBytes())
	default:
		buf.AddTo(&l, p.place, 0)
		buf.AddRingTo(&l, p.place, *ring)
	}
	return &l, buf
}

// railBlock is the bytes of one block in the rail buffers for rounds of
// rows rows.
func (p planner) railBlock(rows int) int64 { return alignUp(int64(rows)*p.rowBytes(), symm.Align) }

// railBytes is the rail stage's memory for rounds of rows rows: the
// staging set and the transport's (internode.RailBytes; for Auto, the most
// any transport it may pick takes).
func (p planner) railBytes(rows int) int64 {
	if n := p.place.Shape.Nodes; n > 1 {
		proto := symm.Growing
		if p.cfg.Graphs {
			proto = symm.Replayable
		}
		return internode.RailBytes(p.cfg.Transport, proto, n, p.railBlock(rows))
	}
	return 0
}

// railRowsWithin is the most rows, up to rows, whose rail rounds take at
// most budget bytes (0 when not even an empty round fits).
func (p planner) railRowsWithin(rows int, budget int64) int {
	lo, hi := 0, rows // p.railBytes(lo) <= budget is kept, once lo > 0
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if p.railBytes(mid) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func (p planner) rowsPerRank() int { return p.cfg.MaxM / p.place.Shape.World() }

// direct is the direct path's memory.
func (p planner) direct() Memory {
	l, _ := p.nodeLayout(nil)
	rows := p.rowsPerRank()
	node := l.Size()
	if p.cfg.Engine == EngineNVLS {
		node += p.nvlsBound()
	}
	return Memory{Engine: p.cfg.Engine, Node: node, Rail: p.railBytes(rows), RailRows: rows}
}

// nvlsGranularity is the multicast granularity the plan assumes: the
// driver's minimum on Hopper (2 MiB; the CPU backend's is smaller).
const nvlsGranularity = 2 << 20

// nvlsBound is the NVLS engine's buffer bound to the multicast object:
// world blocks of MaxM/world rows at the engine's stride (intranode), whole
// multicast granules.
func (p planner) nvlsBound() int64 {
	stride := alignUp(int64(p.rowsPerRank())*p.rowBytes(), kernels.NVLSVector)
	return alignUp(int64(p.place.Shape.World())*stride, nvlsGranularity)
}

// ringShape is the ring's shape from the knobs and defaults, before any
// bound.
func (p planner) ringShape() intranode.RingShape {
	r := intranode.RingShape{Channels: p.knobs.RingChannels, Slots: p.knobs.RingSlots, ChunkBytes: p.knobs.RingChunkBytes}
	if r.Channels == 0 {
		r.Channels = defaultRingChannels
		if p.sms > 0 {
			r.Channels = min(r.Channels, p.sms)
		}
	}
	if r.Slots == 0 {
		r.Slots = defaultRingSlots
	}
	if r.ChunkBytes == 0 {
		r.ChunkBytes = defaultRingChunk
	}
	return r
}

func (p planner) ringNode(r intranode.RingShape) int64 {
	l, _ := p.nodeLayout(&r)
	return l.Size()
}

// ring is the ring's memory under cfg.MaxSymmetricBytes: the FIFOs at
// their default shape, their chunk shrunk (not below minRingChunk, and
// only when the knobs leave it to the bound) until they take at most the
// bound (with a rail: half of it, and no more than leaves a round of one
// row), and the rail in rounds of as many rows as the rest holds. An error names the ring's minimum when even
// that does not fit.
func (p planner) ring() (Memory, error) {
	shape := p.ringShape()
	if err := shape.Check(p.cfg.DType.Size()); err != nil {
		return Memory{}, fmt.Errorf("rs2d: %w", err)
	}
	rows, bound := p.rowsPerRank(), p.cfg.MaxSymmetricBytes
	m := Memory{Engine: EngineRing, Ring: shape, Node: p.ringNode(shape), Rail: p.railBytes(rows), RailRows: rows}
	if bound == 0 || m.Total() <= bound {
		return m, nil
	}
	minShape := shape
	if p.knobs.RingChunkBytes == 0 {
		minShape.ChunkBytes = minRingChunk
		budget := bound
		if p.place.Shape.Nodes > 1 { // half, leaving the rail one row at least
			budget = min(bound/2, bound-p.railBytes(1))
		}
		per := int64(shape.Channels) * int64(max(p.place.Shape.LocalSize-1, 1)) * int64(shape.Slots)
		fixed := p.ringNode(shape) - shape.FifoBytes(p.place.Shape.LocalSize)
		chunk := (budget - fixed) / per / symm.Align * symm.Align
		shape.ChunkBytes = max(minRingChunk, min(shape.ChunkBytes, chunk))
	}
	m.Ring, m.Node = shape, p.ringNode(shape)
	if p.place.Shape.Nodes > 1 {
		m.RailRows = p.railRowsWithin(rows, bound-m.Node)
		m.Rail = p.railBytes(m.RailRows)
	}
	if m.RailRows < 1 || m.Total() > bound {
		least := p.ringNode(minShape) + p.railBytes(1)
		return Memory{}, fmt.Errorf("rs2d: MaxSymmetricBytes=%d is below the ring's minimum of %d bytes per rank (%d channels × %d node peers × %d slots of %d bytes, the pads, and a rail round of one row): %w",
			bound, least, minShape.Channels, p.place.Shape.LocalSize-1, minShape.Slots, minShape.ChunkBytes, device.ErrInvalidArgument)
	}
	return m, nil
}

// choose picks the path of a context: the direct path with the configured
// engine (defaults filled in), unless the engine is the ring or the direct
// path exceeds the bound and the engine was Auto.
func (p planner) choose(asked Engine) (Memory, error) {
	if p.cfg.Engine == EngineRing {
		return p.ring()
	}
	direct := p.direct()
	bound := p.cfg.MaxSymmetricBytes
	if bound == 0 || direct.Total() <= bound {
		return direct, nil
	}
	ring, err := p.ring()
	switch {
	case asked != EngineAuto:
		return Memory{}, fmt.Errorf("rs2d: the %v engine's buffers take %d bytes per rank, above MaxSymmetricBytes=%d (engine auto or ring bounds them): %w",
			asked, direct.Total(), bound, device.ErrInvalidArgument)
	case p.cfg.OverlapWithGEMM:
		return Memory{}, fmt.Errorf("rs2d: the direct path's buffers take %d bytes per rank, above MaxSymmetricBytes=%d, and the ring, which bounds them, does not wait for GEMM signals (OverlapWithGEMM): %w",
			direct.Total(), bound, device.ErrNotSupported)
	case err != nil:
		return Memory{}, err
	}
	return ring, nil
}
