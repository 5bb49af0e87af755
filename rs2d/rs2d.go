// Package rs2d is hiercoll's public API for ReduceScatter2D: a reduce-scatter
// (sum) of an [M, N] tensor per rank into [M/world, N] per rank, over
// nnodes × local_world_size GPUs, that reduces inside each node first and then
// exchanges only 1/lws of the data between nodes.
//
// One call, on rank (node, localRank), enqueued on the caller's stream:
//
//	for n in 0..nnodes-1: cur = (node+n+1) % nnodes   (node swizzle; own node last)
//	    reduce-scatter inside the node the rows destined to cur's ranks:
//	      SM engine (default): one push-reduce kernel: push my rows to my node
//	        peers (rank swizzle, chunk by chunk, counted arrivals), reduce what
//	        they pushed to me (own block straight from the input)
//	      copy engine (with OverlapWithGEMM): copy-engine copies to the peers,
//	        each after the destination's GEMM signal (with SplitFirstBlock, the
//	        first block's first half after its early signal), paced so each
//	        GPU receives one block at a time, then a reduce kernel on a
//	        high-priority stream with a bounded SM budget
//	      placed (ReduceScatterPlaced): the producer stored the rows in the
//	        peers itself; only the reduce kernel, after the placed words
//	    cur != node: send the reduced block to my rail peer on node cur (p2p stream)
//	wait for the blocks from every other node; reduce the nnodes blocks → output
//
// Every wait is on a 32-bit word whose expected value grows with each call, so the next call needs no reset and a failed call leaves nothing
// that a later one could mistake for its own signal (with GEMM overlap, a call rejected before any work
// passes over the signal value its producer may already have raised).
//
//	rs, err := rs2d.New(ctx, comm, dev, rs2d.Config{MaxM: 8192, N: 4096, DType: dtype.BF16})
//	defer rs.Close()
//	err = rs.ReduceScatter(ctx, in, out, stream) // enqueued; stream.Synchronize(ctx) to wait
package rs2d

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/streams"
	"github.com/seed12530e24/hiercoll/symm"
)

// Context owns everything one ReduceScatter2D needs on one rank: symmetric
// buffers and signal pads, its streams, the inter-node transport and the
// call counter. Calls on one Context are serialised; several Contexts may be
// used at once.
type Context struct {
	cfg   Config
	comm  bootstrap.Comm
	dev   device.Device
	place symm.Place

	heap      *symm.Heap
	buf       intranode.Buffers
	rsPerNode symm.Region // nnodes blocks of MaxM/world rows: node-reduced blocks to send
	intra     *intranode.Stage
	rail      internode.Transport // nil on one node
	streams   *streams.Set

	mu        sync.Mutex
	producers []device.Stream // streams that wait on this context's words (AttachProducer)
	epoch     uint32          // calls made so far (the epoch of the last call)
	done      device.Event    // the end of the last call, on the caller's stream
	closed    bool
	tracer    *tracer // stage events, when tracing
}

// New creates a context on every rank of comm (collective: every rank calls
// it with the same Config). It allocates the symmetric buffers, maps the node
// peers' and builds the transport.
func New(ctx context.Context, comm bootstrap.Comm, dev device.Device, cfg Config) (*Context, error) {
	place, err := symm.PlaceOf(comm)
	if err != nil {
		return nil, fmt.Errorf("rs2d: %w", err)
	}
	if err := cfg.validate(place.Shape.World()); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults(dev.Info(), place.Shape.LocalSize)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}

	// Kernels first, before anything collective: loading a module at the
	// first launch, behind a stream already waiting for a peer, can block.
	if err := kernels.Prepare(dev, cfg.DType, cfg.Engine == EngineSM); err != nil {
		return nil, fmt.Errorf("rs2d: %w", err)
	}

	c := &Context{cfg: cfg, comm: comm, dev: dev, place: place}
	shape := place.Shape
	rowBytes := int64(cfg.N) * int64(cfg.DType.Size())

	var l symm.Layout
	c.buf.AddTo(&l, place, int64(cfg.MaxM)*rowBytes)
	if shape.Nodes > 1 {
		c.rsPerNode = l.Add("rs per node", int64(shape.Nodes)*c.blockStride())
	}
	if c.heap, err = symm.New(ctx, comm, dev, &l); err != nil {
		return nil, fmt.Errorf("rs2d: %w", err)
	}
	c.buf.Heap = c.heap
	fail := func(err error) (*Context, error) {
		return nil, errors.Join(err, c.release())
	}
	if c.intra, err = intranode.New(dev, place, c.buf, cfg.DType, cfg.N, cfg.OverlapWithGEMM); err != nil {
		return fail(fmt.Errorf("rs2d: %w", err))
	}
	// Streams first: the transport is the last collective step, so no rank
	// can give up after it and leave the others in a collective release.
	if c.streams, err = streams.NewSet(dev, cfg.CopyStreams); err != nil {
		return fail(fmt.Errorf("rs2d: %w", err))
	}
	if c.done, err = dev.NewEvent(); err != nil {
		return fail(fmt.Errorf("rs2d: %w", err))
	}
	if shape.Nodes > 1 {
		ep := internode.Endpoint{Dev: dev, Comm: comm, Place: place, BlockBytes: c.blockStride(), DType: cfg.DType, Lanes: cfg.RailLanes}
		if c.rail, err = internode.New(ctx, cfg.Transport, ep); err != nil {
			return fail(fmt.Errorf("rs2d: %w", err))
		}
	}
	return c, nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

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

// check validates a call's arguments before any work is enqueued.
func (c *Context) check(in, out Tensor) error {
	world := c.place.Shape.World()
	cfg := c.cfg
	switch {
	case in.DType != cfg.DType || out.DType != cfg.DType:
		return fmt.Errorf("rs2d: input %v and output %v must be %v as configured: %w", in.DType, out.DType, cfg.DType, device.ErrInvalidArgument)
	case in.Cols != cfg.N || out.Cols != cfg.N:
		return fmt.Errorf("rs2d: input has N=%d and output N=%d columns; the context was made for N=%d: %w", in.Cols, out.Cols, cfg.N, device.ErrInvalidArgument)
	case in.Rows <= 0:
		return fmt.Errorf("rs2d: M=%d must be positive: %w", in.Rows, device.ErrInvalidArgument)
	case in.Rows > cfg.MaxM:
		return fmt.Errorf("rs2d: M=%d exceeds MaxM=%d: %w", in.Rows, cfg.MaxM, device.ErrInvalidArgument)
	case in.Rows%world != 0:
		return fmt.Errorf("rs2d: M=%d is not divisible by world size %d: %w", in.Rows, world, device.ErrInvalidArgument)
	case out.Rows != in.Rows/world:
		return fmt.Errorf("rs2d: output has %d rows; M=%d over %d ranks needs %d: %w", out.Rows, in.Rows, world, in.Rows/world, device.ErrInvalidArgument)
	case in.Ptr == 0 || out.Ptr == 0:
		return fmt.Errorf("rs2d: nil input or output pointer: %w", device.ErrInvalidArgument)
	}
	for _, t := range []struct {
		name string
		t    Tensor
	}{{"input", in}, {"output", out}} {
		base, size, err := c.dev.AddressRange(t.t.Ptr)
		if err != nil {
			return fmt.Errorf("rs2d: %s %v is not device memory: %w", t.name, t.t, err)
		}
		if avail := int64(base) + size - int64(t.t.Ptr); avail < t.t.Bytes() {
			return fmt.Errorf("rs2d: %s %v needs %d bytes but its allocation has %d left: %w", t.name, t.t, t.t.Bytes(), avail, device.ErrInvalidArgument)
		}
	}
	if int64(in.Ptr) < int64(out.Ptr)+out.Bytes() && int64(out.Ptr) < int64(in.Ptr)+in.Bytes() {
		return fmt.Errorf("rs2d: output %v overlaps input %v: %w", out, in, device.ErrInvalidArgument)
	}
	return nil
}

// ReduceScatter enqueues out = (sum over ranks of in)[rank's M/world rows] on
// stream s. in is [M, N], out is [M/world, N], both of the context's dtype;
// every rank calls it with the same M. Errors in the arguments are returned
// before anything is enqueued. Failures on the device (a rank that never
// arrives) surface when s is synchronized, as a device.ErrTimeout that names
// the missing rank.
func (c *Context) ReduceScatter(ctx context.Context, in, out Tensor, s device.Stream) error {
	return c.call(ctx, in, out, s, false)
}

// ReduceScatterPlaced is ReduceScatter for a producer that stores each node
// peer's rows straight into the peer's buffer instead of into in: for every
// destination rank whose local rank differs from this rank's, the producer
// waits for the Target's ready word, writes the rows at Target.Rows and
// raises Target.Placed (Signals.Target, WaitReady, RaisePlaced); the rows
// for ranks of this rank's local rank stay in in, released by their GEMM
// signals as with ReduceScatter. Nothing is copied: the call only reduces
// (and, across nodes, sends the node-reduced blocks). The peers' rows in in
// are not read. The producer must run on a stream of its own, not on s nor
// ordered before the call on s: a peer's ready word is written when the
// peer's call starts (gemmrs's GEMM stream is such a producer). Its first
// use of a lazily loaded kernel must not come after such a wait (module
// loads wait for queued work; see gemmrs's warm-up).
func (c *Context) ReduceScatterPlaced(ctx context.Context, in, out Tensor, s device.Stream) error {
	return c.call(ctx, in, out, s, true)
}

func (c *Context) call(ctx context.Context, in, out Tensor, s device.Stream, placed bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("rs2d: reduce-scatter on a closed context: %w", device.ErrClosed)
	}
	err := ctx.Err()
	if err != nil {
		err = fmt.Errorf("rs2d: %w", err)
	} else {
		err = c.check(in, out)
	}
	if err != nil {
		if c.cfg.OverlapWithGEMM {
			c.skipRejected()
		}
		return err
	}
	c.nextEpoch()
	if err := c.enqueue(in, out, s, c.epoch, placed); err != nil {
		return fmt.Errorf("rs2d: call %d: %w", c.epoch, err)
	}
	return nil
}

// SkipCall passes over the next call's GEMM signal value, as a call rejected
// by ReduceScatter does (OverlapWithGEMM; nothing otherwise): for a caller
// that raised a call's signals and then did not make the call, for example
// because its own argument checks failed. Collective, like the call: every
// rank skips the same calls.
func (c *Context) SkipCall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.OverlapWithGEMM && !c.closed {
		c.skipRejected()
	}
}

// SignalAfter is the signal value of the call after the one that signal
// value v releases, when no call in between is rejected (a rejected call
// passes over values; see SignalValue).
func SignalAfter(v uint32) uint32 { return epochAfter(v) }

// nextEpoch advances the call epoch.
func (c *Context) nextEpoch() { c.epoch = epochAfter(c.epoch) }

// epochAfter is the epoch of the call after one of epoch e. Epochs alternate
// in parity (the rail's receive buffers depend on it: internode.Parity) and
// never come back to 0, what the pads start at: at the wrap, 2^32-1 is
// followed by 2 (waits compare cyclically, so 2 is still ahead).
func epochAfter(e uint32) uint32 {
	if e == math.MaxUint32 {
		return 2
	}
	return e + 1
}

// skipRejected passes over the signal value of a call rejected before any
// work: its producer may already have raised the GEMM signals with it
// (NextSignals), and the next call must not take those for its own. It
// skips two epochs, so the calls that do run keep alternating the rail's
// receive-buffer parity (internode.Parity). Every rank rejects the same
// calls when they pass the same arguments, as a collective call must.
func (c *Context) skipRejected() {
	c.nextEpoch()
	c.nextEpoch()
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
	es := int64(c.cfg.DType.Size())
	block := int64(rpr) * int64(c.cfg.N) * es
	return Plan{
		M: m, N: c.cfg.N, RowsPerRank: rpr, Chunks: c.chunks(rpr),
		IntraNodeBytes: int64(shape.Nodes*(shape.LocalSize-1)) * block,
		InterNodeBytes: int64(shape.Nodes-1) * block,
		FlatRingBytes:  int64(shape.World()-1) * block,
	}
}

// chunks picks how many pieces each block of a node step is cut into: enough
// that the reduction overlaps the scatter, few enough that each copy stays
// large (the copy engine needs about 1 MiB to reach its rate). With GEMM
// overlap, one: the scatter goes peer by peer as the producer raises the
// signals and the own step's reduction waits for the own (last) block, so
// chunks only add copies, signals and launches to the call's tail (on 4
// H200s, 8192x8192x8192: 699 µs with chunks by size, 616 µs with one).
func (c *Context) chunks(rowsPerRank int) int {
	k := c.cfg.Chunks
	if k == 0 && c.cfg.OverlapWithGEMM {
		k = 1
	}
	if k == 0 {
		rowBytes := int64(c.cfg.N) * int64(c.cfg.DType.Size())
		const minChunk = 4 << 20
		most := int64(8)
		if c.cfg.Engine == EngineSM {
			most = kernels.MaxPushChunks
		}
		k = int(min(int64(rowsPerRank)*rowBytes/minChunk, most))
	}
	if c.cfg.Engine == EngineSM {
		return max(1, min(k, kernels.MaxPushChunks)) // chunks split elements, not rows
	}
	return max(1, min(k, rowsPerRank))
}

// smGrid sizes the push-reduce kernel for blocks of count elements in
// chunks: the configured SM budgets, two blocks per SM, but no more blocks
// than there are 16-byte vectors per chunk for a block's threads; and sets
// its push order (PushGroup chunks to one peer before the next).
func (c *Context) smGrid(count int64, chunks int) intranode.SMGrid {
	vectors := count * int64(c.cfg.DType.Size()) / 16 / int64(chunks)
	need := int(max(1, (vectors+kernels.PushReduceBlock-1)/kernels.PushReduceBlock))
	return intranode.SMGrid{
		PushBlocks:   max(1, min(kernelBlocksPerSM*c.cfg.PushSMs, need)),
		ReduceBlocks: max(1, min(kernelBlocksPerSM*c.cfg.ReductionSMs, need)),
		Group:        max(1, min(c.cfg.PushGroup, chunks)),
	}
}

func (c *Context) enqueue(in, out Tensor, s device.Stream, epoch uint32, placed bool) error {
	shape, place, set := c.place.Shape, c.place, c.streams
	rpr := in.Rows / shape.World()
	rowBytes := int64(c.cfg.N) * int64(c.cfg.DType.Size())
	blockBytes := int64(rpr) * rowBytes
	grid := c.cfg.ReductionSMs * kernelBlocksPerSM

	if err := c.mark(func(t *tracer) device.Event { return t.start }, s); err != nil {
		return err
	}
	c.startTrace()
	if c.cfg.Engine == EngineSM && !placed {
		return c.enqueueSM(in, out, s, epoch)
	}
	if err := c.intra.Announce(s, epoch); err != nil {
		return err
	}
	if err := set.Fork(s); err != nil {
		return err
	}
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		step := intranode.Step{Node: cur, Input: in.Ptr, RowsPer: rpr, Chunks: c.chunks(rpr), Epoch: epoch, Grid: grid,
			ReduceTo: c.reduceTo(out, cur, epoch), Placed: placed, Trace: c.peerTracer()}
		if n == 0 && !placed {
			step.EarlyRows = c.earlyRows(in.Rows)
		}
		if c.cfg.OverlapWithGEMM && cur == place.Node {
			// This step reduces after the own GEMM block, the last one in
			// consumption order: the producer is done and the SMs are free,
			// so the reduction that ends the call takes FinalSMs.
			step.Grid = c.cfg.FinalSMs * kernelBlocksPerSM
		}
		var seqs []uint32
		if !placed {
			var err error
			if seqs, err = c.intra.Scatter(set.Copy, step, n == 0); err != nil {
				return err
			}
		}
		if err := c.intra.Reduce(set.Reduction, step, seqs); err != nil {
			return err
		}
		if shape.Nodes > 1 && cur != place.Node {
			if err := set.Join(set.P2P, set.Reduction); err != nil {
				return err
			}
			if err := c.rail.Send(set.P2P, cur, step.ReduceTo, blockBytes, epoch); err != nil {
				return err
			}
		}
	}
	if err := c.markScatter(set.Copy...); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.reduce }, set.Reduction); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.p2p }, set.P2P); err != nil {
		return err
	}
	if err := set.Merge(s); err != nil {
		return err
	}
	return c.finish(out, s, epoch, rpr)
}

// reduceTo is where node step cur's reduced block goes.
func (c *Context) reduceTo(out Tensor, cur int, epoch uint32) device.Ptr {
	switch {
	case c.place.Shape.Nodes == 1:
		return out.Ptr
	case cur == c.place.Node:
		return c.rail.RecvBuf(epoch).Add(int64(c.place.Node) * c.blockStride())
	}
	return c.heap.Local().Add(c.rsPerNode.Off + int64(cur)*c.blockStride())
}

// enqueueSM is a call with the SM engine: one push-reduce kernel per node
// step on the caller's stream (on one node, that is the whole call), the
// rail sends on the p2p stream after each.
func (c *Context) enqueueSM(in, out Tensor, s device.Stream, epoch uint32) error {
	shape, place, set := c.place.Shape, c.place, c.streams
	rpr := in.Rows / shape.World()
	blockBytes := int64(rpr) * int64(c.cfg.N) * int64(c.cfg.DType.Size())
	chunks := c.chunks(rpr)
	grid := c.smGrid(int64(rpr)*int64(c.cfg.N), chunks)
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		step := intranode.Step{Node: cur, Input: in.Ptr, RowsPer: rpr, Chunks: chunks, Epoch: epoch, ReduceTo: c.reduceTo(out, cur, epoch)}
		if err := c.intra.PushReduce(s, step, grid); err != nil {
			return err
		}
		if shape.Nodes > 1 && cur != place.Node {
			if err := set.Join(set.P2P, s); err != nil {
				return err
			}
			if err := c.rail.Send(set.P2P, cur, step.ReduceTo, blockBytes, epoch); err != nil {
				return err
			}
		}
	}
	if err := c.markScatter(s); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.reduce }, s); err != nil {
		return err
	}
	if shape.Nodes > 1 {
		if err := set.Join(s, set.P2P); err != nil {
			return err
		}
		if err := c.mark(func(t *tracer) device.Event { return t.p2p }, s); err != nil {
			return err
		}
	}
	return c.finish(out, s, epoch, rpr)
}

// finish waits on s for the other nodes' blocks and sums them into out
// (nothing to do on one node), and marks the end of the call.
func (c *Context) finish(out Tensor, s device.Stream, epoch uint32, rpr int) error {
	shape := c.place.Shape
	if shape.Nodes > 1 {
		if err := c.rail.Wait(s, epoch); err != nil {
			return err
		}
		blocks := kernels.Blocks{
			Src:    c.rail.RecvBuf(epoch),
			Stride: c.blockStride() / int64(c.cfg.DType.Size()),
			N:      shape.Nodes,
			Count:  int64(rpr) * int64(c.cfg.N),
			Self:   -1,
		}
		if err := kernels.LaunchReduce(c.dev, s, c.cfg.DType, c.cfg.FinalSMs*kernelBlocksPerSM, out.Ptr, blocks); err != nil {
			return err
		}
	}
	if err := c.done.Record(s); err != nil {
		return err
	}
	return c.mark(func(t *tracer) device.Event { return t.end }, s)
}

// kernelBlocksPerSM is how many reduce blocks run per SM of the budget.
const kernelBlocksPerSM = 2

// blockStride is the distance between node blocks in the rail buffers.
func (c *Context) blockStride() int64 {
	rowBytes := int64(c.cfg.N) * int64(c.cfg.DType.Size())
	return alignUp(int64(c.cfg.MaxM/c.place.Shape.World())*rowBytes, symm.Align)
}

// Roundings is how many times a float result is rounded to its dtype on the
// way (once per level: the node reduce, and the cross-node reduce when
// nnodes > 1); the accumulation itself is fp32.
func Roundings(nodes int) int {
	if nodes > 1 {
		return 2
	}
	return 1
}

// SignalValue is the value a GEMM producer writes into a signal word to
// release the next ReduceScatter call (OverlapWithGEMM). A call rejected
// before any work (bad arguments, a done context) passes over this value:
// signals already raised with it release nothing, and the producer of the
// call that follows raises them again with the new SignalValue. SkipCall
// does the same for a call the caller gives up on before making it.
func (c *Context) SignalValue() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return epochAfter(c.epoch)
}

// SignalAddr is the device address of the GEMM signal word for destination
// rank dest, for a producer kernel of the caller's own.
func (c *Context) SignalAddr(dest int) (device.Ptr, error) {
	if dest < 0 || dest >= c.place.Shape.World() {
		return 0, fmt.Errorf("rs2d: signal for rank %d of %d: %w", dest, c.place.Shape.World(), device.ErrInvalidArgument)
	}
	return c.intra.GemmSignal(dest), nil
}

// EarlySignalAddr is the device address of the early GEMM signal word for
// destination rank dest (SplitFirstBlock), for a producer kernel of the
// caller's own: raise it when the first Signals.EarlyRows rows of dest's
// block are complete. Only the first block in consumption order has one.
func (c *Context) EarlySignalAddr(dest int) (device.Ptr, error) {
	if dest < 0 || dest >= c.place.Shape.World() {
		return 0, fmt.Errorf("rs2d: early signal for rank %d of %d: %w", dest, c.place.Shape.World(), device.ErrInvalidArgument)
	}
	return c.intra.EarlySignal(dest), nil
}

// earlyRows is how many rows of the first block in consumption order go
// ahead on its early signal in a (not placed) call of m rows: half of them
// with SplitFirstBlock and node peers to send to, else 0.
func (c *Context) earlyRows(m int) int {
	if !c.cfg.SplitFirstBlock || c.place.Shape.LocalSize < 2 {
		return 0
	}
	return m / c.place.Shape.World() / 2
}

// RaiseSignal enqueues on s the write that tells the next call's scatter that
// the rows for rank dest are complete. Use it before that call is enqueued;
// a producer that runs alongside the call takes NextSignals first.
func (c *Context) RaiseSignal(s device.Stream, dest int) error {
	return c.NextSignals().Raise(s, dest)
}

// Signals are the GEMM signals of one call: the value that releases it, and
// the context whose words carry it.
type Signals struct {
	c     *Context
	Value uint32
}

// NextSignals returns the signals of the next ReduceScatter call. Take them
// before enqueuing that call; raise them whenever the rows are ready.
func (c *Context) NextSignals() Signals { return Signals{c: c, Value: c.SignalValue()} }

// Raise enqueues on s the write of the signal of destination rank dest.
func (g Signals) Raise(s device.Stream, dest int) error {
	addr, err := g.c.SignalAddr(dest)
	if err != nil {
		return err
	}
	return g.c.dev.WriteValue32(s, addr, g.Value)
}

// EarlyRows is how many rows of the first block in consumption order
// (ConsumptionOrder()[0]) a producer of a call of m rows should raise its
// early signal after (RaiseEarly), before the rest of the block and its
// signal: 0 when the context does not split it (SplitFirstBlock off, no node
// peers, or a block of one row); placed calls never do.
func (g Signals) EarlyRows(m int) int { return g.c.earlyRows(m) }

// RaiseEarly enqueues on s the write of the early signal of destination
// rank dest: the first EarlyRows rows of its block are complete.
func (g Signals) RaiseEarly(s device.Stream, dest int) error {
	addr, err := g.c.EarlySignalAddr(dest)
	if err != nil {
		return err
	}
	return g.c.dev.WriteValue32(s, addr, g.Value)
}

// Target is where the producer of a placed call (ReduceScatterPlaced) puts
// its rows for rank dest in a call of m rows. Local reports rows that stay
// in the call's input (dest has this rank's local rank: it reduces them
// itself); raise their GEMM signal with Raise. Otherwise wait for Ready
// (WaitReady), write the m/world rows at Rows, then RaisePlaced.
func (g Signals) Target(dest, m int) (Target, error) {
	shape, place := g.c.place.Shape, g.c.place
	switch {
	case dest < 0 || dest >= shape.World():
		return Target{}, fmt.Errorf("rs2d: target for rank %d of %d: %w", dest, shape.World(), device.ErrInvalidArgument)
	case m <= 0 || m > g.c.cfg.MaxM || m%shape.World() != 0:
		return Target{}, fmt.Errorf("rs2d: target for M=%d: want a positive multiple of %d up to MaxM=%d: %w", m, shape.World(), g.c.cfg.MaxM, device.ErrInvalidArgument)
	}
	node, lr := dest/shape.LocalSize, dest%shape.LocalSize
	if lr == place.LocalRank {
		return Target{Dest: dest, Local: true}, nil
	}
	return Target{Dest: dest, Target: g.c.intra.Target(node, lr, m/shape.World())}, nil
}

// Target is one destination's rows in a placed call (Signals.Target).
type Target struct {
	Dest  int
	Local bool
	intranode.Target
}

// WaitReady enqueues on s the wait for t's peer to be ready for the rows.
func (g Signals) WaitReady(s device.Stream, t Target) error {
	if t.Local {
		return nil
	}
	return g.c.dev.WaitValue32(s, t.Ready, device.GEQ, g.Value)
}

// RaisePlaced enqueues on s the write that tells t's peer its rows are in
// place (after them on s); for a Local target, the GEMM signal of t.Dest.
func (g Signals) RaisePlaced(s device.Stream, t Target) error {
	if t.Local {
		return g.Raise(s, t.Dest)
	}
	return g.c.dev.WriteValue32(s, t.Placed, g.Value)
}

// PoisonReceive enqueues on s the filling with the 32-bit word w of the
// rows of this rank's scatter buffer that a call of m rows receives into,
// so that a check sees any block that never arrived. Enqueue it on the
// stream of the next call, before the call.
func (c *Context) PoisonReceive(s device.Stream, m int, w uint32) error {
	if m <= 0 || m > c.cfg.MaxM {
		return fmt.Errorf("rs2d: poison %d rows of %d: %w", m, c.cfg.MaxM, device.ErrInvalidArgument)
	}
	bytes := int64(m) * int64(c.cfg.N) * int64(c.cfg.DType.Size())
	return c.dev.Memset32(s, c.intra.ReceiveRows(), w, bytes/4)
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

// Close releases the context after a barrier with the other ranks, so no
// peer still writes into this rank's buffers. It is collective; a rank that
// never arrives makes it return an error after Config.Timeout.
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
	if err := c.comm.Barrier(ctx); err != nil {
		errs = append(errs, fmt.Errorf("rs2d: close: %w", err))
	}
	closeStep("release")
	return errors.Join(append(errs, c.release())...)
}

// closeStep, when set (by tests), hears each step of Close as it starts.
var closeStep = func(string) {}

// AttachProducer makes Close treat s, a producer's stream that waits on
// this context's words (placed calls wait for the peers' ready flags), as
// one of its own: Close drains it, and ends its waits when it is stuck,
// before the buffers go. s must outlive the context.
func (c *Context) AttachProducer(s device.Stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.producers = append(c.producers, s)
}

// drain waits for the context's streams, its producers' and the end of its
// last call.
func (c *Context) drain(ctx context.Context) error {
	var all []device.Stream
	if c.streams != nil {
		all = c.streams.All()
	}
	for _, s := range append(all, c.producers...) {
		if err := s.Synchronize(ctx); err != nil {
			return err
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
	errs := []error{c.intra.ReleaseWaits(s, c.epoch)}
	if r, ok := c.rail.(internode.WaitReleaser); ok {
		errs = append(errs, r.ReleaseWaits(s, c.epoch))
	}
	errs = append(errs, s.Synchronize(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rs2d: close: releasing stuck waits: %w", err)
	}
	return nil
}

func (c *Context) release() error {
	errs := []error{c.closeTracer()}
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
	if c.heap != nil {
		errs = append(errs, c.heap.Close())
		c.heap = nil
	}
	return errors.Join(errs...)
}
