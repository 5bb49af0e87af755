package rs2d

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/push"
	"github.com/seed12530e24/hiercoll/symm"
)

// ReduceScatter enqueues out = (sum over ranks of in)[rank's M/world rows] on
// stream s. in is [M, N], out is [M/world, N], both of the context's dtype;
// every rank calls it with the same M. Errors in the arguments are returned
// before anything is enqueued. Failures on the device (a rank that never
// arrives) surface when s is synchronized, as a timeout naming the word
// waited for.
func (c *Context) ReduceScatter(ctx context.Context, in, out Tensor, s device.Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.prepare(in, out)
	if err != nil {
		return err
	}
	return k.enqueue(ctx, s)
}

// Call is one reduce-scatter whose arguments were checked and whose GEMM
// signals are known (Prepare): a producer raises Signals, then the call is
// enqueued, or skipped if the producer gave up.
type Call struct {
	c       *Context
	in, out Tensor
	sig     Signals
	used    bool
}

// Prepare checks a call's arguments as ReduceScatter does and returns the
// call, to be enqueued with Enqueue after its producer raised (or enqueued
// the raising of) its Signals. No other call may come between the two. A
// call rejected here passes over its signal value, as ReduceScatter does.
func (c *Context) Prepare(in, out Tensor) (*Call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prepare(in, out)
}

func (c *Context) prepare(in, out Tensor) (*Call, error) {
	if c.closed {
		return nil, fmt.Errorf("rs2d: reduce-scatter on a closed context: %w", device.ErrClosed)
	}
	if err := c.check(in, out); err != nil {
		c.reject()
		return nil, err
	}
	return &Call{c: c, in: in, out: out, sig: c.signals()}, nil
}

// Signals are the call's GEMM signals (with OverlapWithGEMM).
func (k *Call) Signals() Signals { return k.sig }

// Helps reports whether Help does anything for this context: GEMM overlap
// with the copy engine on one node of several ranks, growing signals.
func (c *Context) Helps() bool {
	shape := c.place.Shape
	return c.cfg.OverlapWithGEMM && c.cfg.Engine == EngineCopy && shape.Nodes == 1 && shape.World() > 1 &&
		c.proto == symm.Growing
}

// Help enqueues on s, the producer's stream right after its GEMM (every
// block computed and signalled), the push by every SM of the last rows
// rows of the block for the last peer in scatter order; the copy engine,
// which would still be sending that block when the GEMM ends where the
// copies set the pace, sends only the rows before them and raises the
// peer's arrival after both. Nothing where the context does not help
// (Helps) or rows <= 0. Between Prepare and Enqueue, on every rank alike
// or not (each rank's rows go to one peer).
func (k *Call) Help(s device.Stream, rows int) error {
	c := k.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.Helps() || rows <= 0:
		return nil
	case c.closed:
		return fmt.Errorf("rs2d: help on a closed context: %w", device.ErrClosed)
	case k.used || !k.current():
		return fmt.Errorf("rs2d: help for a call already enqueued, skipped or overtaken: %w", device.ErrInvalidArgument)
	}
	if capturing, err := device.Capturing(s); err != nil || capturing {
		return err // a capture is refused by Enqueue (growing signals)
	}
	rpr := k.in.Rows / c.place.Shape.World()
	step := intranode.Step{Node: c.place.Node, Input: k.in.Ptr, RowsPer: rpr, Epoch: c.proto.Next(c.epoch)}
	return c.intra.Help(s, step, rows, c.finalGrid())
}

// Enqueue enqueues the call on s, as ReduceScatter does.
func (k *Call) Enqueue(ctx context.Context, s device.Stream) error {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	return k.enqueue(ctx, s)
}

// Skip gives the call up: its signal value is passed over, as for a call
// rejected by Prepare, so signals already raised with it release nothing.
// Collective: every rank skips the same calls.
func (k *Call) Skip() {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if !k.used && k.current() && !k.c.closed {
		k.c.reject()
	}
	k.used = true
}

// current reports whether no other call came since k was prepared.
func (k *Call) current() bool { return k.sig.serial == k.c.serial+1 }

func (k *Call) enqueue(ctx context.Context, s device.Stream) error {
	c := k.c
	switch {
	case c.closed:
		return fmt.Errorf("rs2d: reduce-scatter on a closed context: %w", device.ErrClosed)
	case k.used:
		return fmt.Errorf("rs2d: call already enqueued or skipped: %w", device.ErrInvalidArgument)
	case !k.current():
		return fmt.Errorf("rs2d: call prepared for signal value %d, but another call came first: %w", k.sig.Value, device.ErrInvalidArgument)
	}
	k.used = true
	if err := ctx.Err(); err != nil {
		c.reject()
		return fmt.Errorf("rs2d: %w", err)
	}
	capturing, err := device.Capturing(s)
	if err == nil && capturing && c.proto == symm.Growing {
		err = fmt.Errorf("the stream is being captured into a graph, and this context's calls cannot be replayed (make it with Config.Graphs; C: HC_GRAPHS; Python: graphs=True): %w", device.ErrInvalidArgument)
	}
	if err != nil {
		c.reject()
		return fmt.Errorf("rs2d: %w", err)
	}
	c.capturing = capturing
	c.epoch = c.proto.Next(c.epoch)
	c.serial++
	c.calls++
	if err := c.enqueue(k.in, k.out, s, c.epoch); err != nil {
		return fmt.Errorf("rs2d: call %d: %w", c.epoch, err)
	}
	return nil
}

// SkipCall passes over the next call's GEMM signal value, as a call
// rejected by ReduceScatter does (OverlapWithGEMM; nothing otherwise): for a
// caller that raised a call's signals (NextSignals) and then did not make
// the call, for example because its own argument checks failed.
// Collective, like the call: every rank skips the same calls.
func (c *Context) SkipCall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.reject()
	}
}

// reject passes over the signal value of a call rejected before any work,
// with GEMM overlap: its producer may already have raised the GEMM signals
// with it, and the next call must not take those for its own. It skips two
// epochs, so the calls that do run keep alternating the rail's receive-buffer
// parity. Every rank rejects the same calls when they pass the same
// arguments, as a collective call must. With Config.Graphs the values stay
// (every call has the same): a producer clears what it raised instead
// (Signals.Clear).
func (c *Context) reject() {
	if c.cfg.OverlapWithGEMM {
		c.epoch = c.proto.Next(c.proto.Next(c.epoch))
		c.serial++
	}
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

// chunks picks how many pieces each block of a node step is cut into: enough
// that the reduction overlaps the scatter, few enough that each copy stays
// large (the copy engine needs about 1 MiB to reach its rate). With GEMM
// overlap, one: the scatter goes peer by peer as the producer raises the
// signals and the own step's reduction waits for the own (last) block, so
// chunks would only add copies, signals and launches to the call's tail.
func (c *Context) chunks(rowsPerRank int) int {
	k := c.knobs.Chunks
	if k == 0 && c.cfg.OverlapWithGEMM {
		k = 1
	}
	if k == 0 {
		const minChunk = 4 << 20
		most := int64(8)
		if c.cfg.Engine == EngineSM {
			most = push.MaxChunks
		}
		k = int(min(int64(rowsPerRank)*c.rowBytes()/minChunk, most))
	}
	if c.cfg.Engine == EngineSM {
		return max(1, min(k, push.MaxChunks)) // chunks split elements, not rows
	}
	return max(1, min(k, rowsPerRank))
}

// smGrid sizes the push-reduce kernel for blocks of count elements in
// chunks: the SM budgets, two blocks per SM, but no more blocks than there
// are 16-byte vectors per chunk for a block's threads.
func (c *Context) smGrid(count int64, chunks int) intranode.SMGrid {
	vectors := count * int64(c.cfg.DType.Size()) / 16 / int64(chunks)
	need := int(max(1, (vectors+push.Block-1)/push.Block))
	push := pushSMs
	if sms := c.dev.Info().SMs; sms > 0 {
		push = min(push, sms)
	}
	return intranode.SMGrid{
		PushBlocks:   max(1, min(kernelBlocksPerSM*push, need)),
		ReduceBlocks: max(1, min(kernelBlocksPerSM*c.knobs.ReductionSMs, need)),
	}
}

// finalGrid is the grid of the reductions that end a call, when nothing
// else needs the SMs: every SM.
func (c *Context) finalGrid() int {
	return max(c.dev.Info().SMs, c.knobs.ReductionSMs) * kernelBlocksPerSM
}

// enqueue enqueues call epoch on s with the context's engine.
func (c *Context) enqueue(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	if err := c.mark(func(t *tracer) device.Event { return t.start }, s); err != nil {
		return err
	}
	c.intra.BeginTrace()
	if c.place.Shape.World() == 1 {
		return c.enqueueLocal(in, out, s, epoch)
	}
	switch c.cfg.Engine {
	case EngineSM:
		return c.enqueueSM(in, out, s, epoch)
	case EngineRing:
		return c.enqueueRing(in, out, s, epoch)
	case EngineNVLS:
		return c.enqueueNVLS(in, out, s, epoch)
	}
	return c.enqueueCopy(in, out, s, epoch)
}

// reduceTo is where node step cur's reduced block goes.
func (c *Context) reduceTo(out Tensor, cur int, epoch symm.Epoch) device.Ptr {
	if c.rail == nil {
		return out.Ptr
	}
	return c.rail.BlockOf(cur, epoch)
}

// enqueueCopy is a call with the copy engine: the scatter on the copy
// stream, the reductions on the reduction stream, the rail sends on the p2p
// stream, joined back into s at the end.
func (c *Context) enqueueCopy(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	shape, place, set := c.place.Shape, c.place, c.streams
	rpr := in.Rows / shape.World()
	if err := c.intra.Announce(s, epoch); err != nil {
		return err
	}
	if err := set.Fork(s); err != nil {
		return err
	}
	copyStream := set.Copy[0]
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		step := intranode.Step{Node: cur, Input: in.Ptr, RowsPer: rpr, Chunks: c.chunks(rpr), Epoch: epoch, Last: n == shape.Nodes-1,
			Grid: c.knobs.ReductionSMs * kernelBlocksPerSM, ReduceTo: c.reduceTo(out, cur, epoch)}
		if n == 0 {
			step.EarlyRows = c.earlyRows(in.Rows)
		}
		if c.cfg.OverlapWithGEMM && cur == place.Node {
			// This step reduces after the own GEMM block, the last one in
			// consumption order: the producer is done and the SMs are free.
			step.Grid = c.finalGrid()
		}
		seqs, err := c.intra.Scatter(copyStream, step, n == 0)
		if err != nil {
			return err
		}
		if err := c.intra.Reduce(set.Reduction, step, seqs); err != nil {
			return err
		}
		if err := c.sendRail(set.Reduction, cur, rpr, epoch); err != nil {
			return err
		}
	}
	if err := c.mark(func(t *tracer) device.Event { return t.scatter }, copyStream); err != nil {
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

// enqueueLocal is a call on a world of one rank: the sum over one rank is
// its input, so the call is one device-to-device copy (after the GEMM
// signal, with overlap).
func (c *Context) enqueueLocal(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	if c.cfg.OverlapWithGEMM {
		if err := c.intra.WaitBlock(s, intranode.Step{RowsPer: in.Rows, Epoch: epoch}, 0); err != nil {
			return err
		}
	}
	if err := c.dev.Copy(s, out.Ptr, in.Ptr, out.Bytes()); err != nil {
		return err
	}
	if err := c.markNodeStage(s); err != nil {
		return err
	}
	return c.finish(out, s, epoch, in.Rows)
}

// enqueueSM is a call with the SM engine: one push-reduce kernel per node
// step on the caller's stream (on one node, that is the whole call), the
// rail sends on the p2p stream after each.
func (c *Context) enqueueSM(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	shape, place, set := c.place.Shape, c.place, c.streams
	rpr := in.Rows / shape.World()
	chunks := c.chunks(rpr)
	grid := c.smGrid(int64(rpr)*int64(c.cfg.N), chunks)
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		step := intranode.Step{Node: cur, Input: in.Ptr, RowsPer: rpr, Chunks: chunks, Epoch: epoch, Last: n == shape.Nodes-1, ReduceTo: c.reduceTo(out, cur, epoch)}
		if err := c.intra.PushReduce(s, step, grid); err != nil {
			return err
		}
		if err := c.sendRail(s, cur, rpr, epoch); err != nil {
			return err
		}
	}
	if err := c.markNodeStage(s); err != nil {
		return err
	}
	if c.rail != nil {
		if err := c.streams.Join(s, set.P2P); err != nil {
			return err
		}
		if err := c.mark(func(t *tracer) device.Event { return t.p2p }, s); err != nil {
			return err
		}
	}
	return c.finish(out, s, epoch, rpr)
}

// enqueueNVLS is a call with the NVLS engine, on the caller's stream: the
// input into the bound buffer and a node barrier, then per node step one
// load-reduce kernel (the rail send after it on the p2p stream), then the
// barrier that frees the bound buffers for the next call.
func (c *Context) enqueueNVLS(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	shape, place := c.place.Shape, c.place
	rpr := in.Rows / shape.World()
	if err := c.intra.NVLSBegin(s, in.Ptr, rpr, epoch); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.scatter }, s); err != nil {
		return err
	}
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		step := intranode.Step{Node: cur, Input: in.Ptr, RowsPer: rpr, Epoch: epoch, ReduceTo: c.reduceTo(out, cur, epoch), Grid: c.finalGrid()}
		if err := c.intra.NVLSReduce(s, step); err != nil {
			return err
		}
		if err := c.sendRail(s, cur, rpr, epoch); err != nil {
			return err
		}
	}
	if err := c.intra.NVLSEnd(s, epoch); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.reduce }, s); err != nil {
		return err
	}
	if c.rail != nil {
		if err := c.streams.Join(s, c.streams.P2P); err != nil {
			return err
		}
		if err := c.mark(func(t *tracer) device.Event { return t.p2p }, s); err != nil {
			return err
		}
	}
	return c.finish(out, s, epoch, rpr)
}

// sendRail sends node step cur's reduced block, which after is ordered
// after, to the rail peer on node cur, on the p2p stream (nothing for the
// own node, or on one node).
func (c *Context) sendRail(after device.Stream, cur, rpr int, epoch symm.Epoch) error {
	if c.rail == nil || cur == c.place.Node {
		return nil
	}
	if err := c.streams.Join(c.streams.P2P, after); err != nil {
		return err
	}
	return c.rail.Send(c.streams.P2P, cur, int64(rpr)*c.rowBytes(), epoch)
}

// finish has s wait for the other nodes' blocks and sum them into out
// (nothing to do on one node), and marks the end of the call.
func (c *Context) finish(out Tensor, s device.Stream, epoch symm.Epoch, rpr int) error {
	if c.rail != nil {
		if err := c.rail.Finish(s, out.Ptr, int64(rpr)*int64(c.cfg.N), epoch, c.finalGrid()); err != nil {
			return err
		}
	}
	if !c.capturing {
		// A record in a capture only orders the captured work: replays
		// would not record it, so Close cannot wait for them (the caller
		// synchronizes its replays before Close).
		if err := c.done.Record(s); err != nil {
			return err
		}
	}
	return c.mark(func(t *tracer) device.Event { return t.end }, s)
}
