package rs2d

import (
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ce"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
	"github.com/seed12530e24/hiercoll/intranode/pull"
	"github.com/seed12530e24/hiercoll/intranode/push"
	ringengine "github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/symm"
)

// Memory is the device memory of a context's buffers on each rank, which
// Config.MaxSymmetricBytes bounds. With e the element size, lws the GPUs
// per node and B(r) = r × N × e rounded up to 256 bytes:
//
//	direct path: Node = MaxM × N × e (the scatter buffer, or the pull
//	             engine's symmetric input) + pads (+ the pull engine's
//	             one-shot slots and copy-engine landing slots: CopyEngine)
//	             Rail = 3 or 4 × nnodes × B(MaxM/world) + pads   (nnodes > 1)
//	ring:        Node = channels × (lws−1) × slots × chunk + pads
//	             Rail = 3 or 4 × nnodes × B(RailRows) + pads     (nnodes > 1)
//	pull, bound: Node = sets × (world − nnodes) × PullRows × N × e + pads
//	             (sets: 3 on one node, 2 across nodes)
//	             Rail = 3 or 4 × nnodes × B(PullRows) + pads     (nnodes > 1)
//
// The pads are a few KiB of signal words. The rail's three sets are a
// staging block per node and two receive sets (by call parity); the IPC
// transport adds two 256-byte pads, NVSHMEM a 256-byte pad and, when it
// stages its puts, one more set. Rail counts all of it for the transport
// configured, and for Auto the most any transport it may pick takes
// (internode.RailBytes). Under a bound the ring's rail moves each call in
// rounds of RailRows rows per destination block, so that its buffers stay
// bounded too; the pull engine goes in rounds of PullRows rows (= RailRows)
// on one node as across nodes.
type Memory struct {
	Engine Engine // the path: EngineRing, or the direct path's engine
	// Node is the node stage's symmetric heap: the engine's buffers (the
	// scatter buffer, the pull engine's symmetric input or staging sets,
	// the ring's FIFOs) and signal pads; with the NVLS engine, also the
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
	// Ring is the ring's FIFO shape: the ring's, or the pull engine's ring
	// for large calls (RingFifo); zero otherwise.
	Ring ringengine.Shape
	// RingFifo is, of Node, the pull engine's ring FIFOs for large calls
	// (Tuning.RingFromBytes; 0: none).
	RingFifo int64
	// PullRows is, for the pull engine under a bound, the rows of each
	// destination's block per round (0: whole calls).
	PullRows int
	// CopyEngine is, of Node, the pull engine's landing slots for its
	// copy-engine pulls (Tuning.CopyEnginePullBytes; 0: none).
	CopyEngine int64
}

// Total is the memory per rank.
func (m Memory) Total() int64 { return m.Node + m.Rail }

func (m Memory) String() string {
	s := fmt.Sprintf("%s per rank (%v: node stage %s", sizeOf(m.Total()), m.Engine, sizeOf(m.Node))
	if m.Engine == EngineRing {
		s += fmt.Sprintf(", %d channels × %d slots of %s per peer", m.Ring.Channels, m.Ring.Slots, sizeOf(m.Ring.ChunkBytes))
	}
	if m.PullRows > 0 {
		s += fmt.Sprintf(", rounds of %d rows per block through staging sets", m.PullRows)
	}
	if m.CopyEngine > 0 {
		s += fmt.Sprintf(", of it %s of copy-engine landing slots", sizeOf(m.CopyEngine))
	}
	if m.RingFifo > 0 {
		s += fmt.Sprintf(", of it %s of ring FIFOs (%d channels × %d slots of %s per peer)", sizeOf(m.RingFifo), m.Ring.Channels, m.Ring.Slots, sizeOf(m.Ring.ChunkBytes))
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

// MemoryOf is the path New takes for cfg on a world of shape whose devices
// have sms SMs (0: unknown), with cfg.Tuning, and its memory
// per rank; or the error New would give for cfg (a bound that even the
// ring exceeds, for one).
func MemoryOf(cfg Config, shape bootstrap.Shape, sms int) (Memory, error) {
	if shape.Nodes < 1 || shape.LocalSize < 1 {
		return Memory{}, fmt.Errorf("rs2d: world of %d nodes × %d GPUs: %w", shape.Nodes, shape.LocalSize, device.ErrInvalidArgument)
	}
	_, mem, err := newPlanner(cfg, symm.Place{Shape: shape}, sms)
	return mem, err
}

// newPlanner validates cfg, fills in its defaults and picks its path: the
// planner carries the Config in effect (the engine resolved).
func newPlanner(cfg Config, place symm.Place, sms int) (planner, Memory, error) {
	if err := cfg.validate(place.Shape.World()); err != nil {
		return planner{}, Memory{}, err
	}
	asked := cfg.Engine
	p := planner{cfg: cfg.withDefaults(place.Shape.LocalSize), place: place, knobs: cfg.Tuning, sms: sms}
	// The copy engine's landing slots, then the ring's FIFOs, only where
	// the direct path fits with them.
	if b := p.cfg.MaxSymmetricBytes; b > 0 && p.direct().Total() > b {
		if p.knobs.CopyEnginePullBytes = -1; p.direct().Total() > b {
			p.knobs.RingFromBytes = -1
		}
	}
	mem, err := p.choose(asked)
	if err != nil {
		return planner{}, Memory{}, err
	}
	p.cfg.Engine, p.pullRows = mem.Engine, mem.PullRows
	// Rounds do not replay: the rail's receive sets alternate by round,
	// counted on the host.
	rounds := mem.PullRows > 0 || mem.Engine == EngineRing && mem.RailRows < p.rowsPerRank()
	if p.cfg.Graphs && (mem.Engine == EngineNVLS || rounds) && place.Shape.World() > 1 {
		return planner{}, Memory{}, fmt.Errorf("rs2d: the %v engine%s does not replay in CUDA graphs (Config.Graphs): %w", mem.Engine, boundNote(rounds), device.ErrNotSupported)
	}
	return p, mem, nil
}

// boundNote says, for an engine in rounds, that the bound made it so.
func boundNote(rounds bool) string {
	if rounds {
		return " in rounds under MaxSymmetricBytes"
	}
	return ""
}

// planner computes both paths' memory for a configuration on a world of
// place's shape.
type planner struct {
	cfg   Config
	place symm.Place
	knobs Tuning
	sms   int // the device's SMs (channels are capped by them)
	// pullRows is, for the pull engine under a bound, the rows of each
	// destination's block per round (0: whole calls, from the context's
	// symmetric input).
	pullRows int
}

func (p planner) rowBytes() int64 { return int64(p.cfg.N) * int64(p.cfg.DType.Size()) }

// spec is what the context's engine is made for.
func (p planner) spec() intranode.Spec {
	return intranode.Spec{Place: p.place, DType: p.cfg.DType, Cols: p.cfg.N, MaxRows: p.cfg.MaxM, Proto: p.proto(),
		ReductionSMs: p.knobs.ReductionSMsOf(p.cfg.Engine, p.sms)}
}

// proto is how the context's signal words tell calls apart.
func (p planner) proto() symm.Protocol {
	if p.cfg.Graphs {
		return symm.Replayable
	}
	return symm.Growing
}

// maker is the maker of the context's engine (the ring's with FIFOs of
// shape ring); nil on a world of one rank, where a call is one device copy,
// unless the engine is NVLS, which sets its multicast object up all the
// same (the gate and the set-up are exercised on one GPU too).
func (p planner) maker(ring *ringengine.Shape) intranode.Maker {
	spec := p.spec()
	switch {
	case p.cfg.Engine == EngineNVLS:
		return nvls.NewMaker(spec)
	case p.place.Shape.World() == 1:
		return nil
	case ring != nil:
		return ringengine.NewMaker(spec, *ring)
	case p.cfg.Engine == EngineSM:
		return push.NewMaker(spec)
	case p.cfg.Engine == EnginePull:
		return pull.NewMaker(spec, p.pullRows, p.knobs.OneShotBytes, p.copyEngine(), p.pullRing())
	}
	return ce.NewMaker(spec)
}

// nodeLayout lays out the node stage's heap: the GEMM signals (every
// context has them: Signals answers with or without overlap, though only
// an overlapped call waits on them), the engine's regions (the ring's
// with FIFOs of shape ring); the pull engine's symmetric input is an
// allocation of its own (inputLayout). New allocates exactly these.
func (p planner) nodeLayout(ring *ringengine.Shape) (*symm.Layout, intranode.Maker, *intranode.GemmSignals) {
	var l symm.Layout
	gemm := intranode.NewGemmSignals(&l, p.place, p.knobs.Segments, p.knobs.SplitFirstBlock)
	m := p.maker(ring)
	if m != nil {
		m.AddTo(&l)
	}
	return &l, m, gemm
}

// inputLayout is the pull engine's symmetric input for whole calls: MaxM
// rows in an allocation of its own beside the node heap (the copy engine
// reads a peer's memory at its rate beside the engine's sums only where
// nothing else of the peer's lies in the same allocation:
// benchmarks/RESULTS.md), or nil.
func (p planner) inputLayout() (*symm.Layout, symm.Region) {
	if p.cfg.Engine != EnginePull || p.pullRows != 0 {
		return nil, symm.Region{}
	}
	var l symm.Layout
	return &l, l.Add("symmetric input", int64(p.cfg.MaxM)*p.rowBytes())
}

// railBlock is the bytes of one block in the rail buffers for rounds of
// rows rows.
func (p planner) railBlock(rows int) int64 { return alignUp(int64(rows)*p.rowBytes(), symm.Align) }

// railBytes is the rail stage's memory for rounds of rows rows: the
// staging set and the transport's (internode.RailBytes; for Auto, the most
// any transport it may pick takes).
func (p planner) railBytes(rows int) int64 {
	if n := p.place.Shape.Nodes; n > 1 {
		return internode.RailBytes(p.cfg.Transport, p.proto(), n, p.railBlock(rows))
	}
	return 0
}

// railRowsWithin is the most rows, up to rows, whose rail rounds take at
// most budget bytes (0 when not even an empty round fits).
func (p planner) railRowsWithin(rows int, budget int64) int {
	return mostRows(rows, func(r int) bool { return p.railBytes(r) <= budget })
}

// mostRows is the largest r in [0, rows] for which fits(r) holds, fits
// holding for every r below one that it holds for (0 when it holds for
// none above 0).
func mostRows(rows int, fits func(int) bool) int {
	lo, hi := 0, rows
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func (p planner) rowsPerRank() int { return p.cfg.MaxM / p.place.Shape.World() }

// copyEngine is the pull engine's copy-engine pulls as the knobs set them.
func (p planner) copyEngine() pull.CopyEngine {
	return pull.CopyEngine{MinBlock: p.knobs.CopyEnginePullBytes, Chunk: p.knobs.CopyEnginePullChunk}
}

// pullRing is the pull engine's ring for large calls as the knobs set it.
func (p planner) pullRing() pull.Ring {
	k := p.knobs
	return pull.Ring{MinBlock: k.RingFromBytes, Shape: ringengine.Shape{Channels: k.RingChannels, Slots: k.RingSlots, ChunkBytes: k.RingChunkBytes}, SMs: p.sms}
}

// direct is the direct path's memory.
func (p planner) direct() Memory {
	l, _, _ := p.nodeLayout(nil)
	rows := p.rowsPerRank()
	node := l.Size()
	if in, _ := p.inputLayout(); in != nil {
		node += in.Size()
	}
	if p.cfg.Engine == EngineNVLS {
		node += p.nvlsBound()
	}
	m := Memory{Engine: p.cfg.Engine, Node: node, Rail: p.railBytes(rows), RailRows: rows}
	if p.cfg.Engine == EnginePull && p.pullRows == 0 {
		m.CopyEngine = p.copyEngine().LandingBytes(p.spec())
		if r := p.pullRing().Resolved(p.spec()); r.MinBlock > 0 {
			m.Ring, m.RingFifo = r.Shape, r.Shape.FifoBytes(p.place.Shape.LocalSize)
		}
	}
	return m
}

// nvlsGranularity is the multicast granularity the plan assumes: the
// driver's minimum on Hopper (2 MiB; the CPU backend's is smaller).
const nvlsGranularity = 2 << 20

// nvlsBound is the NVLS engine's buffer bound to the multicast object:
// world blocks of MaxM/world rows at the engine's stride (intranode), whole
// multicast granules.
func (p planner) nvlsBound() int64 {
	stride := alignUp(int64(p.rowsPerRank())*p.rowBytes(), nvls.Vector)
	return alignUp(int64(p.place.Shape.World())*stride, nvlsGranularity)
}

// ringShape is the ring's shape from the knobs and defaults, before any
// bound.
func (p planner) ringShape() ringengine.Shape {
	return ringengine.ShapeOf(p.knobs.RingChannels, p.knobs.RingSlots, p.knobs.RingChunkBytes, p.sms)
}

func (p planner) ringNode(r ringengine.Shape) int64 {
	l, _, _ := p.nodeLayout(&r)
	return l.Size()
}

// ring is the ring's memory under cfg.MaxSymmetricBytes: the FIFOs at
// their default shape, their chunk shrunk (not below ring.MinChunkBytes, and
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
		minShape.ChunkBytes = ringengine.MinChunkBytes
		budget := bound
		if p.place.Shape.Nodes > 1 { // half, leaving the rail one row at least
			budget = min(bound/2, bound-p.railBytes(1))
		}
		fixed := p.ringNode(shape) - shape.FifoBytes(p.place.Shape.LocalSize)
		shape = shape.Fit(budget, fixed, p.place.Shape.LocalSize, symm.Align)
	}
	m.Ring, m.Node = shape, p.ringNode(shape)
	if p.place.Shape.Nodes > 1 {
		m.RailRows = p.railRowsWithin(rows, bound-m.Node)
		m.Rail = p.railBytes(m.RailRows)
	}
	if m.RailRows < 1 || m.Total() > bound {
		least := p.ringNode(minShape) + p.railBytes(1)
		return Memory{}, &belowMinimum{least: least, err: fmt.Errorf("rs2d: MaxSymmetricBytes=%d is below the ring's minimum of %d bytes per rank (%d channels × %d node peers × %d slots of %d bytes, the pads, and a rail round of one row): %w",
			bound, least, minShape.Channels, p.place.Shape.LocalSize-1, minShape.Slots, minShape.ChunkBytes, device.ErrInvalidArgument)}
	}
	return m, nil
}

// pullBounded is the pull engine's memory under cfg.MaxSymmetricBytes: the
// call in rounds of as many rows of each destination's block as the
// staging sets (a block of those rows per destination on another GPU of
// the node; three on one node, where two rounds' sets may be read while
// the next is copied in, else two) and, across nodes, the rail's buffers
// for a round leave room for. An error names the
// minimum, a round of one row, when even that does not fit.
func (p planner) pullBounded() (Memory, error) {
	q := p
	q.cfg.Engine = EnginePull
	node := func(rows int) int64 {
		q.pullRows = rows
		l, _, _ := q.nodeLayout(nil)
		return l.Size()
	}
	total := func(rows int) int64 { return node(rows) + p.railBytes(rows) }
	bound, most := p.cfg.MaxSymmetricBytes, p.rowsPerRank()
	if total(1) > bound {
		return Memory{}, &belowMinimum{least: total(1), err: fmt.Errorf("rs2d: MaxSymmetricBytes=%d is below the pull engine's minimum of %d bytes per rank (rounds of one row): %w",
			bound, total(1), device.ErrInvalidArgument)}
	}
	rows := mostRows(most, func(r int) bool { return total(r) <= bound }) // at least 1: total(1) fits
	return Memory{Engine: EnginePull, Node: node(rows), Rail: p.railBytes(rows), RailRows: rows, PullRows: rows}, nil
}

// choose picks the path of a context: the direct path with the configured
// engine (defaults filled in), unless the engine is the ring or the direct
// path exceeds the bound; then a pull engine, named or Auto, goes in rounds
// (Auto: where the rounds fit, else the ring).
func (p planner) choose(asked Engine) (Memory, error) {
	if p.cfg.Engine == EngineRing {
		return p.ring()
	}
	direct := p.direct()
	bound := p.cfg.MaxSymmetricBytes
	if bound == 0 || direct.Total() <= bound {
		return direct, nil
	}
	if asked == EnginePull {
		return p.pullBounded()
	}
	var pullErr error
	if asked == EngineAuto && !p.cfg.OverlapWithGEMM && p.place.Shape.LocalSize <= pull.MaxLocalSize {
		// The pull engine in rounds where it fits, else the ring.
		m, err := p.pullBounded()
		if err == nil {
			return m, nil
		}
		pullErr = err
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
		return Memory{}, smallerMinimum(err, pullErr)
	}
	return ring, nil
}

// belowMinimum is a bound below a path's least memory, which it names.
type belowMinimum struct {
	least int64
	err   error
}

func (b *belowMinimum) Error() string { return b.err.Error() }
func (b *belowMinimum) Unwrap() error { return b.err }

// smallerMinimum is, of two paths' errors, the one that names the smaller
// minimum (a bound below both: the other path's minimum is not the least).
func smallerMinimum(a, b error) error {
	var x, y *belowMinimum
	if errors.As(a, &x) && errors.As(b, &y) && y.least < x.least {
		return b
	}
	return a
}
