package rs2d

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
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
	summed  bool // the producer sums the own block (Summed)
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
	call := intranode.Call{Input: k.in.Ptr, RowsPer: rpr, Epoch: c.proto.Next(c.epoch)}
	return c.ce.Help(s, intranode.Step{Call: call, Node: c.place.Node, Rows: rpr}, rows, c.finalGrid())
}

// Sum describes the reduction of this rank's own block of the call for a
// producer whose GEMM does it (intranode.Sum): with GEMM overlap, the copy
// engine and one node of several ranks, else false. A
// producer that takes it over calls Summed before Enqueue, after enqueueing
// its GEMM; no other call may come between Prepare and Enqueue.
func (k *Call) Sum() (intranode.Sum, bool) {
	c := k.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ce == nil || c.closed || k.used || !k.current() || c.rail != nil {
		return intranode.Sum{}, false
	}
	rpr := k.in.Rows / c.place.Shape.World()
	call := intranode.Call{Input: k.in.Ptr, RowsPer: rpr, Epoch: c.proto.Next(c.epoch)}
	return c.ce.SumOf(intranode.Step{Call: call, Node: c.place.Node, Rows: rpr, ReduceTo: k.out.Ptr})
}

// Summed says that the producer's GEMM sums this rank's own block (Sum):
// the call raises each block's arrivals segment by segment and launches no
// reduction of it. Every rank of the node says the same. The output is
// complete only once the producer's GEMM is: under the growing protocol the
// call does not wait for the own block's signals, so the producer makes
// the call's stream wait for its GEMM after Enqueue (producer.Overlapped
// does, through its done event).
func (k *Call) Summed() {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	k.summed = true
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
	if err := c.enqueue(k.in, k.out, s, c.epoch, k.summed); err != nil {
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
		if err := t.t.checkAligned(t.name); err != nil {
			return err
		}
		base, size, err := c.dev.AddressRange(t.t.Ptr)
		if err != nil {
			return fmt.Errorf("rs2d: %s %v is not device memory: %w", t.name, t.t, err)
		}
		if avail := int64(base) + size - int64(t.t.Ptr); avail < t.t.Bytes() {
			return fmt.Errorf("rs2d: %s %v needs %d bytes but its allocation has %d left: %w", t.name, t.t, t.t.Bytes(), avail, device.ErrInvalidArgument)
		}
	}
	if device.Overlap(in.Ptr, in.Bytes(), out.Ptr, out.Bytes()) {
		return fmt.Errorf("rs2d: output %v overlaps input %v: %w", out, in, device.ErrInvalidArgument)
	}
	if c.input.Size > 0 {
		sym := c.symInput()
		if device.Overlap(sym, c.input.Size, out.Ptr, out.Bytes()) {
			return fmt.Errorf("rs2d: output %v lies in the symmetric input (Input), which the peers read: %w", out, device.ErrInvalidArgument)
		}
		if in.Ptr != sym && device.Overlap(sym, c.input.Size, in.Ptr, in.Bytes()) {
			return fmt.Errorf("rs2d: input %v lies in the symmetric input but does not start where it does (Input): %w", in, device.ErrInvalidArgument)
		}
	}
	return nil
}

// Input returns this rank's symmetric input as an [m, N] tensor: a caller
// that writes a call's rows there and passes it as the call's input saves
// the copy into it (the pull engine reads the peers' rows in place). It is
// the context's memory, valid until Close; a call that reads it ends only
// after every peer has read it, so the next rows may go in once the call's
// stream reaches them. ErrNotSupported with engines other than pull (they
// read the input where it is).
//
// Ranks may mix Input and buffers of their own in a call, except where a
// buffer of the caller's goes in pieces or rounds (on one node of 2 GPUs,
// blocks from 128 MiB; of more than 2, blocks from 32 MiB, but only with
// the ring for large calls off: Tuning.RingFromBytes, whose ring reads
// every rank's input where it lies) or where the copy engine
// pulls Input's rows (one node of 2 GPUs, blocks from
// Tuning.CopyEnginePullBytes): then every rank passes Input or none does. A
// call that mixes them there is caught by the first handshake, as for
// registered inputs (Register): on the CPU backend the call fails naming
// both layouts; on GPUs the kernel traps (the CUDA context is lost), since
// its peers would otherwise sum rows nobody wrote or wait for a handshake
// never made.
func (c *Context) Input(m int) (Tensor, error) {
	switch {
	case c.input.Size == 0:
		return Tensor{}, fmt.Errorf("rs2d: the %v engine has no symmetric input (the pull engine has; other engines read the input where it is): %w", c.cfg.Engine, device.ErrNotSupported)
	case m <= 0 || m > c.cfg.MaxM:
		return Tensor{}, fmt.Errorf("rs2d: input of %d rows, want 1 to MaxM=%d: %w", m, c.cfg.MaxM, device.ErrInvalidArgument)
	}
	return Tensor{Ptr: c.symInput(), Rows: m, Cols: c.cfg.N, DType: c.cfg.DType}, nil
}

// chunks is how many pieces each block of a node step is cut into: what
// the tuning asks, or by size (0), as the engine cuts them
// (intranode.Chunker). With GEMM overlap, one unless asked: the scatter goes
// peer by peer as the producer raises the signals and the own step's
// reduction waits for the own (last) block, so chunks would only add
// copies, signals and launches to the call's tail.
func (c *Context) chunks(rowsPerRank int) int {
	k := c.knobs.Chunks
	if k == 0 && c.cfg.OverlapWithGEMM {
		k = 1
	}
	if ch, ok := c.engine.(intranode.Chunker); ok {
		return ch.Chunks(k, rowsPerRank, c.rowBytes())
	}
	return 1
}

// finalGrid is the grid of the reductions that end a call, when nothing
// else needs the SMs: every SM.
func (c *Context) finalGrid() int {
	return max(c.dev.Info().SMs, c.knobs.ReductionSMs) * intranode.BlocksPerSM
}
