package gemmrs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// Run enqueues on s out = (Σ over ranks of A·B)[this rank's M/world rows],
// in Config.Mode. A is [M, KLocal], B is [KLocal, N], out is [M/world, N],
// all of the configured dtype; every rank calls it with the same M. The
// arguments are checked before anything is enqueued. As with
// rs2d.Context.ReduceScatter, failures on the device (a rank that never
// calls) surface when s is synchronized, as a timeout naming what was
// waited for.
//
// A, B and C stay in use until s has passed the call: change A or B only
// in work ordered after it on s.
func (g *GemmRS) Run(ctx context.Context, a, b, out Tensor, s device.Stream) error {
	return g.RunMode(ctx, g.cfg.Mode, a, b, out, s)
}

// RunMode is Run in the given mode (Auto: ModeFor(M)). Both modes raise the
// same signals for the reduce-scatter, so ranks may even differ in mode.
func (g *GemmRS) RunMode(ctx context.Context, mode Mode, a, b, out Tensor, s device.Stream) error {
	if err := g.lockUsable(ctx); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.checkGemm(a, b); err != nil {
		return err
	}
	c := g.cTensor(a.Rows)
	if err := g.checkRS(c, out); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		t    Tensor
	}{{"A", a}, {"B", b}} {
		if overlaps(out, t.t) {
			return fmt.Errorf("gemmrs: output %v overlaps %s %v: %w", out, t.name, t.t, device.ErrInvalidArgument)
		}
	}
	if mode == Auto {
		mode = g.ModeFor(a.Rows)
	}
	v := g.rs.SignalValue()
	raised := false
	var err error
	switch mode {
	case Overlap:
		err = g.enqueueOverlap(ctx, a, b, c, out, s, v, &raised)
	case Sequential:
		err = g.enqueueSequential(ctx, a, b, c, out, s, v, &raised)
	default:
		return fmt.Errorf("gemmrs: unknown mode %v: %w", mode, device.ErrInvalidArgument)
	}
	if err != nil {
		if mode == Overlap {
			// Keep s ordered after whatever reached the GEMM stream, so
			// that the caller may free A and B once s is synchronized.
			err = errors.Join(err, g.joinBack(s))
		}
		return g.fail(mode.String()+" call", raised, err)
	}
	g.last = mode
	return nil
}

// joinBack makes s wait for all work queued so far on the GEMM stream.
func (g *GemmRS) joinBack(s device.Stream) error {
	if err := g.gemmDone.Record(g.gemmStream); err != nil {
		return err
	}
	return s.WaitEvent(g.gemmDone)
}

// Gemm enqueues C = A·B into the GemmRS's C buffer on s, on every SM, and
// returns C's first M rows: the GEMM alone, for measurements and for
// callers that reduce-scatter C themselves (ReduceScatter, or another
// library). LastGemmTime then times it.
func (g *GemmRS) Gemm(ctx context.Context, a, b Tensor, s device.Stream) (Tensor, error) {
	if err := g.lockUsable(ctx); err != nil {
		return Tensor{}, err
	}
	defer g.mu.Unlock()
	if err := g.checkGemm(a, b); err != nil {
		return Tensor{}, err
	}
	c := g.cTensor(a.Rows)
	if err := g.gemmWhole(a, b, c, s); err != nil {
		return Tensor{}, fmt.Errorf("gemmrs: gemm: %w", err)
	}
	return c, nil
}

// ReduceScatter enqueues the reduce-scatter of an [M, N] tensor in (C from
// Gemm, or any other) into out on s, without a GEMM: it raises every signal
// on s, then runs the call.
func (g *GemmRS) ReduceScatter(ctx context.Context, in, out Tensor, s device.Stream) error {
	if err := g.lockUsable(ctx); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.checkRS(in, out); err != nil {
		return err
	}
	v := g.rs.SignalValue()
	raised := false
	err := g.raiseAll(s, v, &raised)
	if err == nil {
		err = g.reduceScatter(ctx, in, out, s, v)
	}
	if err != nil {
		return g.fail("reduce-scatter", raised, err)
	}
	return nil
}

// lockUsable starts a call: ctx must be live; it takes g.mu (the caller
// unlocks it) and checks the GemmRS can be used, unlocking again if not.
func (g *GemmRS) lockUsable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gemmrs: %w", err)
	}
	g.mu.Lock()
	if err := g.usable(); err != nil {
		g.mu.Unlock()
		return err
	}
	return nil
}

func (g *GemmRS) usable() error {
	switch {
	case g.closed:
		return fmt.Errorf("gemmrs: call on a closed GemmRS: %w", device.ErrClosed)
	case g.broken != nil:
		return fmt.Errorf("gemmrs: an earlier call failed after raising its signals (%v); make a new GemmRS: %w", g.broken, device.ErrClosed)
	}
	return nil
}

// fail reports a call that could not be enqueued. Once signals were raised
// for the call's value, a later call would take them for its own: the
// GemmRS is then marked broken.
func (g *GemmRS) fail(what string, raised bool, err error) error {
	if raised {
		g.broken = err
		return fmt.Errorf("gemmrs: %s: %w (the GemmRS cannot be used again)", what, err)
	}
	return fmt.Errorf("gemmrs: %s: %w", what, err)
}

// enqueueOverlap: the GEMM stream waits for s, computes the blocks in
// consumption order, raising each block's signal after it; the
// reduce-scatter on s waits for the signals on the device; s joins the GEMM
// stream at the end. The GEMM is enqueued first so that it starts while the
// host is still enqueueing the reduce-scatter; v is the value the
// reduce-scatter call enqueued after it waits for, which is safe to raise
// first because every wait is on the device.
func (g *GemmRS) enqueueOverlap(ctx context.Context, a, b, c, out Tensor, s device.Stream, v uint32, raised *bool) error {
	gs := g.gemmStream
	rowsPer := a.Rows / g.world
	if err := g.ready.Record(s); err != nil {
		return err
	}
	if err := gs.WaitEvent(g.ready); err != nil {
		return err
	}
	order := g.order
	if g.hooks != nil && g.hooks.order != nil {
		order = g.hooks.order(append([]int(nil), order...))
	}
	separateSignals := g.hooks != nil && g.hooks.signals != nil
	sig := g.rs.NextSignals()
	if sig.Value != v {
		return fmt.Errorf("the reduce-scatter's next signal value is %d, not %d: %w", sig.Value, v, device.ErrInvalidArgument)
	}
	targets := make([]rs2d.Target, g.world)
	for d := range targets {
		targets[d] = rs2d.Target{Dest: d, Local: true} // into C, then its signal
		if g.cfg.Placed {
			t, err := sig.Target(d, a.Rows)
			if err != nil {
				return err
			}
			targets[d] = t
		}
	}
	if err := g.warmUp(ctx, a, b, targets, rowsPer); err != nil {
		return err
	}
	if err := g.gemmStart.Record(gs); err != nil {
		return err
	}
	// The first block the scatter consumes may go in two parts: its first
	// early rows, their early signal, then the rest (SplitFirstBlock).
	early := 0
	if !g.cfg.Placed {
		early = sig.EarlyRows(a.Rows)
	}
	split := func(d int) bool { return d == g.order[0] && early > 0 }
	traced := 0
	for _, d := range order {
		if g.hooks != nil && g.hooks.beforeBlock != nil {
			if err := g.hooks.beforeBlock(gs, d); err != nil {
				return err
			}
		}
		spec := g.blockSpec(a, b, d, rowsPer, g.cfg.GemmSMs)
		if t := targets[d]; !t.Local {
			if err := sig.WaitReady(gs, t); err != nil {
				return err
			}
			spec.C = t.Rows
		}
		if split(d) {
			head, tail := splitRows(spec, early)
			if err := g.mm.Gemm(gs, head); err != nil {
				return fmt.Errorf("GEMM of the first %d rows of the block for rank %d: %w", early, d, err)
			}
			if !separateSignals {
				*raised = true
				if err := sig.RaiseEarly(gs, d); err != nil {
					return err
				}
			}
			spec = tail
		}
		if err := g.mm.Gemm(gs, spec); err != nil {
			return fmt.Errorf("GEMM of the block for rank %d: %w", d, err)
		}
		if traced < len(g.blockEnds) {
			if err := g.blockEnds[traced].Record(gs); err != nil {
				return err
			}
			traced++
		}
		if !separateSignals {
			*raised = true
			if err := sig.RaisePlaced(gs, targets[d]); err != nil {
				return err
			}
		}
	}
	if err := g.gemmEnd.Record(gs); err != nil {
		return err
	}
	g.timed, g.traced = true, traced
	if err := g.gemmDone.Record(gs); err != nil {
		return err
	}
	if separateSignals {
		*raised = true
		if err := g.hooks.signals(g.gemmDone, func(st device.Stream, d int) error {
			if split(d) {
				if err := sig.RaiseEarly(st, d); err != nil {
					return err
				}
			}
			return sig.RaisePlaced(st, targets[d])
		}); err != nil {
			return err
		}
	}
	call := g.rs.ReduceScatter
	if g.cfg.Placed {
		call = g.rs.ReduceScatterPlaced
	}
	if err := g.reduceScatterWith(ctx, call, c, out, s, v); err != nil {
		return err
	}
	return s.WaitEvent(g.gemmDone)
}

// warmUp runs, when blocks go to node peers, each kind of block GEMM of
// the call that has not run before once into C, and waits for it. cuBLAS
// loads a GEMM's kernel at its first use (CUDA's lazy loading), and a
// module load waits for work queued on the device: a first block GEMM
// enqueued behind the wait for a peer's ready flag held the host in the
// load while the peer waited for this rank's call to announce itself, on
// every rank at once (a deadlock, seen on H200s). The GEMM stream must
// already wait for the caller's stream (A and B).
func (g *GemmRS) warmUp(ctx context.Context, a, b Tensor, targets []rs2d.Target, rowsPer int) error {
	placed := false
	for _, t := range targets {
		placed = placed || !t.Local
	}
	if !placed {
		return nil // nothing waits on the GEMM stream before its GEMMs
	}
	if g.warm == nil {
		g.warm = map[warmKey]bool{}
	}
	var ran []warmKey
	for d, t := range targets {
		spec := g.blockSpec(a, b, d, rowsPer, g.cfg.GemmSMs)
		if !t.Local {
			spec.C = t.Rows
		}
		key := warmKey{rows: rowsPer, align: int64(spec.C) % warmAlign}
		if g.warm[key] || slices.Contains(ran, key) {
			continue
		}
		spec.C = g.cBuf.Add(key.align)
		if err := g.mm.Gemm(g.gemmStream, spec); err != nil {
			return fmt.Errorf("warm-up GEMM of %d rows: %w", rowsPer, err)
		}
		ran = append(ran, key)
	}
	if len(ran) == 0 {
		return nil
	}
	if err := g.gemmStream.Synchronize(ctx); err != nil {
		return fmt.Errorf("warm-up GEMM of %d rows: %w", rowsPer, err)
	}
	for _, k := range ran {
		g.warm[k] = true
	}
	return nil
}

// enqueueSequential: the whole GEMM on s, every signal raised after it on
// s, then the reduce-scatter.
func (g *GemmRS) enqueueSequential(ctx context.Context, a, b, c, out Tensor, s device.Stream, v uint32, raised *bool) error {
	if err := g.gemmWhole(a, b, c, s); err != nil {
		return err
	}
	if err := g.raiseAll(s, v, raised); err != nil {
		return err
	}
	return g.reduceScatter(ctx, c, out, s, v)
}

// gemmWhole enqueues C = A·B on s, on every SM, between the timing events.
func (g *GemmRS) gemmWhole(a, b, c Tensor, s device.Stream) error {
	if err := g.gemmStart.Record(s); err != nil {
		return err
	}
	spec := device.GemmSpec{M: a.Rows, N: g.cfg.N, K: g.cfg.KLocal, A: a.Ptr, B: b.Ptr, C: c.Ptr, DType: g.cfg.DType}
	if err := g.mm.Gemm(s, spec); err != nil {
		return err
	}
	if err := g.gemmEnd.Record(s); err != nil {
		return err
	}
	g.timed = true
	return nil
}

// blockSpec is the GEMM of destination rank d's rows.
func (g *GemmRS) blockSpec(a, b Tensor, d, rowsPer, sms int) device.GemmSpec {
	es := int64(g.cfg.DType.Size())
	row0 := int64(d) * int64(rowsPer)
	return device.GemmSpec{
		M: rowsPer, N: g.cfg.N, K: g.cfg.KLocal,
		A: a.Ptr.Add(row0 * int64(g.cfg.KLocal) * es), B: b.Ptr, C: g.cBuf.Add(row0 * int64(g.cfg.N) * es),
		DType: g.cfg.DType, SMs: sms,
	}
}

// splitRows splits the GEMM of a block into its first rows and the rest.
func splitRows(spec device.GemmSpec, rows int) (head, tail device.GemmSpec) {
	spec = spec.Dense()
	es := int64(spec.DType.Size())
	head, tail = spec, spec
	head.M, tail.M = rows, spec.M-rows
	tail.A = spec.A.Add(int64(rows) * int64(spec.LDA) * es)
	tail.C = spec.C.Add(int64(rows) * int64(spec.LDC) * es)
	return head, tail
}

// raise enqueues on st the write of v into the GEMM signal word of
// destination rank d.
func (g *GemmRS) raise(st device.Stream, d int, v uint32) error {
	addr, err := g.rs.SignalAddr(d)
	if err != nil {
		return err
	}
	return g.dev.WriteValue32(st, addr, v)
}

// raiseEarly enqueues on st the write of v into the early signal word of
// the first block in consumption order.
func (g *GemmRS) raiseEarly(st device.Stream, v uint32) error {
	addr, err := g.rs.EarlySignalAddr(g.order[0])
	if err != nil {
		return err
	}
	return g.dev.WriteValue32(st, addr, v)
}

// raiseAll enqueues on s the writes of v into every GEMM signal word, and
// into the early one when the context splits first blocks (a call whose
// blocks are one row does not wait for it; the write is harmless).
func (g *GemmRS) raiseAll(s device.Stream, v uint32, raised *bool) error {
	*raised = true
	if g.cfg.SplitFirstBlock == SplitOn {
		if err := g.raiseEarly(s, v); err != nil {
			return err
		}
	}
	for d := 0; d < g.world; d++ {
		if err := g.raise(s, d, v); err != nil {
			return err
		}
	}
	return nil
}

// reduceScatter runs the reduce-scatter call whose signals carry v.
func (g *GemmRS) reduceScatter(ctx context.Context, in, out Tensor, s device.Stream, v uint32) error {
	return g.reduceScatterWith(ctx, g.rs.ReduceScatter, in, out, s, v)
}

// reduceScatterWith runs call (rs.ReduceScatter or ReduceScatterPlaced),
// whose signals carry v.
func (g *GemmRS) reduceScatterWith(ctx context.Context, call func(context.Context, Tensor, Tensor, device.Stream) error,
	in, out Tensor, s device.Stream, v uint32) error {
	if err := call(ctx, in, out, s); err != nil {
		return err
	}
	// The call just enqueued waited for v; the next waits for its
	// successor. Anything else means someone else called the context.
	if next := g.rs.SignalValue(); next != rs2d.SignalAfter(v) {
		return fmt.Errorf("the reduce-scatter call did not wait for signal value %d (the next call's is %d): %w", v, next, device.ErrInvalidArgument)
	}
	return nil
}

func (g *GemmRS) cTensor(m int) Tensor {
	return Tensor{Ptr: g.cBuf, Rows: m, Cols: g.cfg.N, DType: g.cfg.DType}
}

// checkGemm validates A and B before any work is enqueued.
func (g *GemmRS) checkGemm(a, b Tensor) error {
	cfg := g.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemmrs: %s: %w", fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case a.DType != cfg.DType || b.DType != cfg.DType:
		return bad("A is %v and B is %v; the GemmRS was made for %v", a.DType, b.DType, cfg.DType)
	case a.Cols != cfg.KLocal || b.Rows != cfg.KLocal:
		return bad("A has %d columns and B %d rows; the GemmRS was made for KLocal=%d", a.Cols, b.Rows, cfg.KLocal)
	case b.Cols != cfg.N:
		return bad("B has N=%d columns; the GemmRS was made for N=%d", b.Cols, cfg.N)
	case a.Rows <= 0:
		return bad("M=%d must be positive", a.Rows)
	case a.Rows > cfg.MaxM:
		return bad("M=%d exceeds MaxM=%d", a.Rows, cfg.MaxM)
	case a.Rows%g.world != 0:
		return bad("M=%d is not divisible by world size %d", a.Rows, g.world)
	case a.Ptr == 0 || b.Ptr == 0:
		return bad("nil A or B pointer")
	}
	if err := g.checkRange("A", a); err != nil {
		return err
	}
	return g.checkRange("B", b)
}

// checkRS validates a reduce-scatter's input and output as rs2d does, so
// that rs2d never rejects a call whose signals were already raised.
func (g *GemmRS) checkRS(in, out Tensor) error {
	cfg := g.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemmrs: %s: %w", fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case in.DType != cfg.DType || out.DType != cfg.DType:
		return bad("input %v and output %v must be %v as configured", in.DType, out.DType, cfg.DType)
	case in.Cols != cfg.N || out.Cols != cfg.N:
		return bad("input has N=%d and output N=%d columns; the GemmRS was made for N=%d", in.Cols, out.Cols, cfg.N)
	case in.Rows <= 0 || in.Rows > cfg.MaxM || in.Rows%g.world != 0:
		return bad("M=%d must be positive, at most MaxM=%d and divisible by world size %d", in.Rows, cfg.MaxM, g.world)
	case out.Rows != in.Rows/g.world:
		return bad("output has %d rows; M=%d over %d ranks needs %d", out.Rows, in.Rows, g.world, in.Rows/g.world)
	case in.Ptr == 0 || out.Ptr == 0:
		return bad("nil input or output pointer")
	case overlaps(in, out):
		return bad("output %v overlaps input %v", out, in)
	}
	if err := g.checkRange("input", in); err != nil {
		return err
	}
	return g.checkRange("output", out)
}

func (g *GemmRS) checkRange(name string, t Tensor) error {
	base, size, err := g.dev.AddressRange(t.Ptr)
	if err != nil {
		return fmt.Errorf("gemmrs: %s %v is not device memory: %w", name, t, err)
	}
	if avail := int64(base) + size - int64(t.Ptr); avail < t.Bytes() {
		return fmt.Errorf("gemmrs: %s %v needs %d bytes but its allocation has %d left: %w", name, t, t.Bytes(), avail, device.ErrInvalidArgument)
	}
	return nil
}

func overlaps(x, y Tensor) bool {
	return int64(x.Ptr) < int64(y.Ptr)+y.Bytes() && int64(y.Ptr) < int64(x.Ptr)+x.Bytes()
}
