// Package rs2d is hiercoll's public API for ReduceScatter2D: a reduce-scatter
// (sum) of an [M, N] tensor per rank into [M/world, N] per rank, over
// nnodes × local_world_size GPUs, that reduces inside each node first and then
// exchanges only 1/lws of the data between nodes.
//
// One call, on rank (node, localRank), enqueued on the caller's stream:
//
//	engine.Begin
//	for n in 0..nnodes-1: cur = (node+n+1) % nnodes   (node swizzle; own node last)
//	    engine.Step: reduce-scatter inside the node the rows destined to cur's ranks
//	    cur != node: send the reduced block to my rail peer on node cur (internode)
//	engine.End
//	wait for the blocks from every other node; reduce the nnodes blocks → output
//
// The engine (Config.Engine; each is a folder under intranode, loop.go
// drives it):
//   - SM engine (intranode/push; Auto's on nodes of 1 or more than 8
//     GPUs): one push-reduce kernel per step, SM stores to the node peers,
//     counted arrivals;
//   - copy engine (intranode/ce, with OverlapWithGEMM): copy-engine copies
//     to the peers, each after the destination's GEMM signal, then a reduce
//     kernel on a bounded SM budget; on one node the producer's SMs may push
//     the end of the last peer's block once the GEMM is done (Call.Help);
//   - pull engine (intranode/pull; Auto's without OverlapWithGEMM on nodes
//     of 2 to 8 GPUs, and under Config.MaxSymmetricBytes): one kernel per
//     step; a whole call of small blocks in one shot (each rank pushes its
//     rows into its peers' landing slots, which sum them: Tuning.OneShotBytes),
//     a larger one pulled, each rank
//     reading its block from every node peer's symmetric input (Input: zero
//     copy where the caller writes its rows there; or a caller's tensor
//     registered with Register, read in place; else copied in, on one node
//     of more than 2 GPUs in rounds staged in the symmetric input at blocks
//     of 32-128 MiB, else in pieces overlapping the pull from blocks of
//     128 MiB); on one node
//     of 2 GPUs zero-copy and registered calls of large blocks are pulled
//     by the copy engine instead (Tuning.CopyEnginePullBytes), and on one
//     node of more than 2 GPUs whole calls of large blocks go around the
//     ring's SM stores, reading each rank's input where it lies
//     (Tuning.RingFromBytes); under a bound the call goes in rounds
//     through staging sets (a registered input is read in place, on one
//     node in one launch);
//   - ring (intranode/ring, named, or under a bound the pull engine's
//     rounds do not fit): FIFO slots with head/tail credits, memory that
//     does not grow with M; the call goes in rail rounds of the rows the
//     bound leaves room for (memory.go);
//   - NVLS (intranode/nvls, only when named): each block load-reduced
//     through the node's NVLink multicast object.
//
// The NVLS engine creates NVLink multicast objects, which can take some
// machines' GPUs out of service: New runs it only when Config.Engine names
// it and device.AllowMulticast lets it on every rank (HIERCOLL_ALLOW_MULTICAST=1,
// no variable that disables NVLS, the device's MULTICAST_SUPPORTED), else
// it fails with ErrNotSupported before any multicast driver call.
//
// Every wait is on a 32-bit signal word. By default its expected value grows
// with each call (symm.Epoch), so the next call needs no reset and a failed
// call leaves nothing that a later one could mistake for its own signal.
// With Config.Graphs every call carries the same values and each word is
// reset on the device after its last wait (symm.Replayable), so a call
// captured in a CUDA graph replays correctly. With GEMM overlap, a producer
// raises the call's GEMM signals (Signals); a call rejected before any work
// passes over the value its producer may already have raised.
//
// Registered inputs (Register, like NCCL's ncclCommRegister): every rank
// registers its own tensor of the same shape once, collectively, and the
// pull engine then reads the peers' rows of calls with it in place, wherever
// the tensors lie (plain PyTorch tensors), without the copy into the
// symmetric input, in whole calls or rounds. Every rank passes its
// registered tensor to the same calls (or none does), keeps it alive until
// Deregister or Close, and the memory must be IPC-exportable (not VMM).
//
// A world of one rank needs no signals: a call is one device copy.
//
//	rs, err := rs2d.New(ctx, comm, dev, rs2d.Config{MaxM: 8192, N: 4096, DType: dtype.BF16})
//	defer rs.Close()
//	err = rs.ReduceScatter(ctx, in, out, stream) // enqueued; stream.Synchronize(ctx) to wait
package rs2d

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ce"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
	ringengine "github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/streams"
	"github.com/seed12530e24/hiercoll/symm"
)

// Context owns everything one ReduceScatter2D needs on one rank: symmetric
// buffers and signal pads, its streams, the rail stage and the call
// counter. Calls on one Context are serialised; several Contexts may be used
// at once.
type Context struct {
	cfg   Config
	knobs Tuning // the tuning in effect (ReductionSMs resolved)
	comm  bootstrap.Comm
	dev   device.Device
	place symm.Place

	heap    *symm.Heap
	gemm    *intranode.GemmSignals // waited on with OverlapWithGEMM
	engine  intranode.Engine       // nil on a world of one rank
	ce      *ce.Engine             // engine, when it is the copy engine
	rail    *internode.Rail        // nil on one node
	streams *streams.Set
	input   symm.Region // the symmetric input (the pull engine's; zero size: none), in inputHeap
	// inputHeap is the symmetric input's own allocation (nil: none).
	inputHeap *symm.Heap

	mem     Memory        // the path and its buffers' sizes
	railSeq symm.Epoch    // the ring's last rail round (its rail counts rounds, not calls)
	proto   symm.Protocol // how the signal words tell calls apart (Config.Graphs)

	mu        sync.Mutex
	epoch     symm.Epoch   // the epoch of the last call
	serial    uint64       // calls enqueued or passed over so far (Call.current)
	calls     uint64       // calls enqueued (Close compares them across ranks)
	capturing bool         // the call being enqueued is captured into a graph
	done      device.Event // the end of the last call, on the caller's stream
	closed    bool
	tracer    *tracer // stage events, when tracing

	regs      map[device.Ptr]*registration // registered inputs by start (Register)
	regSerial uint32                       // the last registration's serial
}

// New creates a context on every rank of comm (collective: every rank calls
// it with the same Config). It allocates the symmetric buffers, maps the node
// peers' and builds the rail stage.
func New(ctx context.Context, comm bootstrap.Comm, dev device.Device, cfg Config) (*Context, error) {
	place, err := symm.PlaceOf(comm)
	if err != nil {
		return nil, fmt.Errorf("rs2d: %w", err)
	}
	plan, mem, err := newPlanner(cfg, place, dev.Info().SMs)
	if err != nil {
		return nil, err
	}
	cfg, knobs := plan.cfg, plan.knobs
	knobs.ReductionSMs = knobs.ReductionSMsOf(cfg.Engine, dev.Info().SMs)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}

	// The multicast gate, on every rank and agreed, before anything else:
	// no rank makes a multicast driver call unless every rank may.
	var permit device.Permit
	if cfg.Engine == EngineNVLS {
		if permit, err = allowNVLS(ctx, comm, dev); err != nil {
			return nil, err
		}
	}

	c := &Context{cfg: cfg, knobs: knobs, comm: comm, dev: dev, place: place, mem: mem, proto: plan.proto()}

	var ring *ringengine.Shape
	if cfg.Engine == EngineRing {
		ring = &mem.Ring
	}
	l, maker, gemm := plan.nodeLayout(ring)
	inputLayout, input := plan.inputLayout()
	if nv, ok := maker.(*nvls.Maker); ok {
		nv.Permit = permit
	}
	// Kernels first, before anything collective: loading a module at the
	// first launch, behind a stream already waiting for a peer, can block.
	// A world of one rank launches nothing; the rail's final reduce is the
	// plain reduce kernel.
	if maker != nil && place.Shape.World() > 1 {
		if err := errors.Join(kernels.Prepare(dev, cfg.DType), maker.Prepare(dev)); err != nil {
			return nil, fmt.Errorf("rs2d: %w", err)
		}
	}
	if c.heap, err = symm.New(ctx, comm, dev, l); err != nil {
		return nil, fmt.Errorf("rs2d: %w", err)
	}
	fail := func(err error) (*Context, error) {
		return nil, errors.Join(fmt.Errorf("rs2d: %w", err), c.release())
	}
	if inputLayout != nil {
		if c.inputHeap, err = symm.New(ctx, comm, dev, inputLayout); err != nil {
			return fail(err)
		}
		c.input = input
	}
	gemm.Bind(c.heap, c.proto)
	c.gemm = gemm
	// Streams first: the rail is the last collective step, so no rank can
	// give up after it and leave the others in a collective release.
	if c.streams, err = streams.NewSet(dev, 1); err != nil {
		return fail(err)
	}
	if c.done, err = dev.NewEvent(); err != nil {
		return fail(err)
	}
	if maker != nil {
		env := intranode.Env{Spec: plan.spec(), Dev: dev, Comm: comm, Heap: c.heap, Streams: c.streams, Input: c.input, InputHeap: c.inputHeap}
		if cfg.OverlapWithGEMM {
			env.Gemm = gemm
		}
		if c.engine, err = maker.Make(ctx, env); err != nil {
			return fail(err)
		}
		c.ce, _ = c.engine.(*ce.Engine)
	}
	if place.Shape.Nodes > 1 {
		ep := internode.Endpoint{Dev: dev, Comm: comm, Place: place, BlockBytes: plan.railBlock(mem.RailRows), DType: cfg.DType, Lanes: knobs.RailLanes, Protocol: c.proto, Timeout: cfg.Timeout}
		if c.rail, err = internode.NewRail(ctx, cfg.Transport, ep); err != nil {
			return fail(err)
		}
	}
	return c, nil
}

// allowNVLS is the multicast gate for the NVLS engine (device.AllowMulticast:
// named, HIERCOLL_ALLOW_MULTICAST=1, no variable disabling NVLS, the device's
// MULTICAST_SUPPORTED), agreed on by every rank: if any rank is refused,
// every rank returns ErrNotSupported naming the refusing conditions, and no
// multicast driver call was made anywhere.
func allowNVLS(ctx context.Context, comm bootstrap.Comm, dev device.Device) (device.Permit, error) {
	permit, refused := device.AllowMulticast(dev, "rs2d Config.Engine = nvls")
	if _, err := bootstrap.Agree(ctx, comm, refused, nil); err != nil {
		if refused != nil {
			return device.Permit{}, fmt.Errorf("rs2d: engine nvls: %w", refused)
		}
		return device.Permit{}, fmt.Errorf("rs2d: engine nvls: %w", err)
	}
	return permit, nil
}

// ReductionSMs is the SM budget in effect of the intra-node reduce (the
// copy engine's reduce beside a GEMM, the SM engine's reduce blocks, the
// pull engine's whole node step).
func (c *Context) ReductionSMs() int { return c.knobs.ReductionSMs }

// Config returns the configuration in effect (defaults filled in).
func (c *Context) Config() Config { return c.cfg }

// Place returns where this rank sits in the job.
func (c *Context) Place() symm.Place { return c.place }

// Transport names the inter-node transport in use ("none" on one node).
func (c *Context) Transport() string {
	if c.rail == nil {
		return "none"
	}
	return c.rail.Kind().String()
}

func (c *Context) rowBytes() int64 { return int64(c.cfg.N) * int64(c.cfg.DType.Size()) }

// Memory is the path in use and its buffers' device memory per rank.
func (c *Context) Memory() Memory { return c.mem }

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// Roundings is how many times a float result is rounded to its dtype on the
// way with the direct path (once per level: the node reduce, and the
// cross-node reduce when nnodes > 1); the accumulation itself is fp32.
//
// With several nodes, each node's partial sum is rounded to the dtype before
// it crosses the rail, so its range is the dtype's: in fp16, +40000 on both
// ranks of one node and −40000 on both of another sum to 0 in fp32, but
// each node's partial (±80000) overflows to ±Inf, and the result is NaN (an
// NCCL ring, which rounds after every hop, gives ±Inf or NaN too). Keeping
// the partials in fp32 across the rail would double the bytes between nodes
// and is not offered.
func Roundings(nodes int) int {
	if nodes > 1 {
		return 2
	}
	return 1
}

// Roundings is the most times this context rounds a float result to its
// dtype on the way: Roundings(nnodes) on the direct path; the ring (the
// ring engine, or the pull engine's for large calls: Tuning.RingFromBytes)
// rounds at each of its lws−1 hops instead of once in the node (partial
// sums travel in the dtype), so lws−1 (at least 1), plus 1 across nodes.
func (c *Context) Roundings() int {
	shape := c.place.Shape
	if c.cfg.Engine != EngineRing && c.mem.RingFifo == 0 {
		return Roundings(shape.Nodes)
	}
	return max(1, shape.LocalSize-1) + Roundings(shape.Nodes) - 1
}

// ConsumptionOrder is the order in which the scatter consumes destination
// ranks' row blocks (node swizzle, then rank swizzle): a GEMM producer that
// computes blocks in this order lets communication start earliest.
func (c *Context) ConsumptionOrder() []int {
	shape, place := c.place.Shape, c.place
	order := make([]int, 0, shape.World())
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		for _, lr := range intranode.RankSwizzle(place.LocalRank, shape.LocalSize) {
			order = append(order, cur*shape.LocalSize+lr)
		}
	}
	return order
}

// Plan is the shape of one call, for reports.
type Plan struct {
	M, N, RowsPerRank, Chunks int
	// Bytes this rank sends: to its node peers, to other nodes, and what a
	// flat ring reduce-scatter would send across the network instead.
	IntraNodeBytes, InterNodeBytes, FlatRingBytes int64
}

// PlanFor describes a call with M rows.
func (c *Context) PlanFor(m int) Plan {
	shape := c.place.Shape
	rpr := m / shape.World()
	block := int64(rpr) * c.rowBytes()
	return Plan{
		M: m, N: c.cfg.N, RowsPerRank: rpr, Chunks: c.chunks(rpr),
		IntraNodeBytes: int64(shape.Nodes*(shape.LocalSize-1)) * block,
		InterNodeBytes: int64(shape.Nodes-1) * block,
		FlatRingBytes:  int64(shape.World()-1) * block,
	}
}

// PoisonReceive enqueues on s the filling with the 32-bit word w of the
// rows of this rank's scatter buffer that a call of m rows receives into,
// so that a check sees any block that never arrived. Enqueue it on the
// stream of the next call, before the call.
func (c *Context) PoisonReceive(s device.Stream, m int, w uint32) error {
	if m <= 0 || m > c.cfg.MaxM {
		return fmt.Errorf("rs2d: poison %d rows of %d: %w", m, c.cfg.MaxM, device.ErrInvalidArgument)
	}
	if c.place.Shape.World() == 1 {
		return nil // nothing is received
	}
	r, ok := c.engine.(receiver)
	if !ok {
		return nil
	}
	if at, size := r.ReceiveRows(m); size > 0 {
		return c.dev.Memset32(s, at, w, size/4)
	}
	return nil
}

// receiver is an engine that receives rows into a buffer of its own: the
// scatter buffer, the ring's FIFO slots, the buffer bound to the multicast
// object (not the pull engine, which reads the peers' inputs in place).
type receiver interface {
	ReceiveRows(rows int) (device.Ptr, int64)
}

// Close releases the context after a barrier with the other ranks, so no
// peer still writes into this rank's buffers. It is collective; a rank that
// never arrives makes it return an error after Config.Timeout, naming it.
// At the barrier the ranks compare how many calls each made: when a call
// timed out because a rank never made it, every rank's Close returns a
// *StallError naming that rank, with its node and local rank (the timeout
// itself names the word waited on, raised by the next rank along).
//
// When this rank's own work is stuck on the device (waiting for a rank that
// is gone), Close ends the waits by writing values past every target into
// this rank's own signal words, lets the work drain (with garbage results:
// the call already failed), and then releases everything. Only if the work
// still does not drain are the buffers left allocated, with an error saying
// so, rather than Close hanging in a free that waits for the device.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	var errs []error
	closeStep("drain")
	if err := c.drain(ctx); err != nil {
		errs = append(errs, fmt.Errorf("rs2d: close: draining: %w", err))
		if device.Stuck(err) {
			again, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
			defer cancel()
			closeStep("release waits")
			if err := c.releaseWaits(again); err != nil {
				errs = append(errs, err)
			}
			closeStep("drain again")
			if err := c.drain(again); device.Stuck(err) {
				return errors.Join(append(errs, fmt.Errorf("rs2d: close: device work of this context is stuck; its buffers stay allocated: %w", err))...)
			}
		}
	}
	closeStep("barrier")
	if err := c.closeBarrier(ctx); err != nil {
		errs = append(errs, err)
	}
	closeStep("release")
	return errors.Join(append(errs, c.release())...)
}

// closeStep, when set (by tests), hears each step of Close as it starts.
var closeStep = func(string) {}

// drain waits for the context's streams and the end of its last call.
func (c *Context) drain(ctx context.Context) error {
	if c.streams != nil {
		for _, s := range c.streams.All() {
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
		}
	}
	if c.done != nil {
		return c.done.Synchronize(ctx)
	}
	return nil
}

// releaseWaits ends every wait on this rank's own signal words, with writes
// on a stream of its own (the context's streams may be the stuck ones).
func (c *Context) releaseWaits(ctx context.Context) (err error) {
	s, err := c.dev.NewStream(device.High)
	if err != nil {
		return fmt.Errorf("rs2d: close: releasing stuck waits: %w", err)
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	var errs []error
	if c.engine != nil {
		errs = append(errs, c.engine.ReleaseWaits(s, c.epoch))
	}
	if c.gemm != nil { // nil only when New failed before the heap
		errs = append(errs, c.gemm.ReleaseWaits(s, c.epoch))
	}
	if c.rail != nil {
		errs = append(errs, c.rail.ReleaseWaits(s, c.railEpoch()))
	}
	errs = append(errs, s.Synchronize(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rs2d: close: releasing stuck waits: %w", err)
	}
	return nil
}

// symInput is this rank's symmetric input (0: none).
func (c *Context) symInput() device.Ptr {
	if c.inputHeap == nil {
		return 0
	}
	return c.inputHeap.Local().Add(c.input.Off)
}

func (c *Context) release() error {
	errs := []error{c.closeTracer(), c.releaseRegistrations()}
	if c.engine != nil {
		errs = append(errs, c.engine.Close())
		c.engine, c.ce = nil, nil
	}
	if c.done != nil {
		errs = append(errs, c.done.Close())
		c.done = nil
	}
	if c.streams != nil {
		errs = append(errs, c.streams.Close())
		c.streams = nil
	}
	if c.rail != nil {
		errs = append(errs, c.rail.Close())
		c.rail = nil
	}
	if c.inputHeap != nil {
		errs = append(errs, c.inputHeap.Close())
		c.inputHeap = nil
	}
	if c.heap != nil {
		errs = append(errs, c.heap.Close())
		c.heap = nil
	}
	return errors.Join(errs...)
}
