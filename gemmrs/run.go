package gemmrs

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
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
	return g.run(ctx, g.cfg.Mode, a, b, Scales{}, out, s)
}

// RunScaled is Run with fp8 operands' scales (Config.Input E4M3): out =
// (Σ over ranks of each rank's scaled product)[this rank's rows], B being
// [N, KLocal]; per tensor sc.A·sc.B·(A·Bᵀ), row-wise or block-wise as
// sc.Scaling says (Scales). The scales are read on the device when the
// GEMM runs.
func (g *GemmRS) RunScaled(ctx context.Context, a, b Tensor, sc Scales, out Tensor, s device.Stream) error {
	return g.run(ctx, g.cfg.Mode, a, b, sc, out, s)
}

// RunModeScaled is RunScaled in the given mode (see RunMode).
func (g *GemmRS) RunModeScaled(ctx context.Context, mode Mode, a, b Tensor, sc Scales, out Tensor, s device.Stream) error {
	return g.run(ctx, mode, a, b, sc, out, s)
}

// RunMode is Run in the given mode (Auto: ModeFor(M)). The two modes go
// through different reduce-scatter contexts, so every rank passes the same
// mode (a rank in the other one waits for its peers until the timeout).
func (g *GemmRS) RunMode(ctx context.Context, mode Mode, a, b, out Tensor, s device.Stream) error {
	return g.run(ctx, mode, a, b, Scales{}, out, s)
}

func (g *GemmRS) run(ctx context.Context, mode Mode, a, b Tensor, sc Scales, out Tensor, s device.Stream) error {
	if err := g.lockUsable(ctx); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.checkGemm(a, b, sc, out); err != nil {
		return err
	}
	if mode == Auto {
		mode = g.ModeFor(a.Rows)
	}
	if mode != Overlap && mode != Sequential {
		return fmt.Errorf("gemmrs: unknown mode %v: %w", mode, device.ErrInvalidArgument)
	}
	rs := g.rs
	if mode == Sequential {
		rs = g.seq
	}
	call, err := rs.Prepare(g.cTensor(a.Rows), out)
	if err != nil {
		return fmt.Errorf("gemmrs: %w", err)
	}
	raised := false
	if mode == Overlap {
		err = g.enqueueOverlap(ctx, a, b, sc, call, s, &raised)
	} else {
		err = g.enqueueSequential(ctx, a, b, sc, call, s)
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
	return g.GemmScaled(ctx, a, b, Scales{}, s)
}

// GemmScaled is Gemm with fp8 operands' scales (see RunScaled).
func (g *GemmRS) GemmScaled(ctx context.Context, a, b Tensor, sc Scales, s device.Stream) (Tensor, error) {
	if err := g.lockUsable(ctx); err != nil {
		return Tensor{}, err
	}
	defer g.mu.Unlock()
	if err := g.checkGemm(a, b, sc, Tensor{}); err != nil {
		return Tensor{}, err
	}
	c := g.cTensor(a.Rows)
	if err := g.gemmWhole(a, b, sc, c, s); err != nil {
		return Tensor{}, fmt.Errorf("gemmrs: gemm: %w", err)
	}
	return c, nil
}

// ReduceScatter enqueues the reduce-scatter of an [M, N] tensor in (C from
// Gemm, or any other) into out on s, without a GEMM, by the sequential
// calls' context (C, its symmetric input, is read in place; another tensor
// is copied in or read as that context's engine reads a caller's buffer).
func (g *GemmRS) ReduceScatter(ctx context.Context, in, out Tensor, s device.Stream) error {
	if err := g.lockUsable(ctx); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.seq.ReduceScatter(ctx, in, out, s); err != nil {
		return fmt.Errorf("gemmrs: reduce-scatter: %w", err)
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

// enqueueOverlap: the own GEMM's overlapped call (Overlapped), or the GEMM
// stream waits for s, computes the blocks in consumption order, raising
// each block's signal after it; the reduce-scatter on s waits for the
// signals on the device; s joins the GEMM stream at the end. The GEMM is enqueued first so that it starts while the
// host is still enqueueing the reduce-scatter, which is safe because every
// wait for a signal is on the device.
func (g *GemmRS) enqueueOverlap(ctx context.Context, a, b Tensor, sc Scales, call *rs2d.Call, s device.Stream, raised *bool) error {
	gs := g.gemmStream
	sig := call.Signals()
	raise := func(st device.Stream, d int) error {
		*raised = true
		if g.split(sig, a.Rows, d) {
			if err := sig.RaiseEarly(st, d); err != nil {
				return err
			}
		}
		return sig.Raise(st, d)
	}
	if spec := g.ownSpec(a, b, sc); g.knobs.Gemm == GemmOwn && (g.hooks == nil || g.fp8()) && spec.Check() == nil {
		var err error
		many := SumsManyBlocks(g.knobs.SumOwnBlock, spec.K, a.Rows/g.world)
		*raised, err = g.ovl.Enqueue(ctx, s, spec, g.order, call, g.knobs.Help, many)
		if *raised {
			g.timed, g.traced, g.ownTraced = true, 0, true
		}
		return err
	}
	if err := g.ready.Record(s); err != nil {
		return err
	}
	if err := gs.WaitEvent(g.ready); err != nil {
		return err
	}
	if g.hooks != nil && g.hooks.signals != nil {
		// The test hook raises the signals, on streams of its own.
		if err := g.gemmBlocks(a, b, sig, nil); err != nil {
			return err
		}
		if err := g.hooks.signals(g.gemmDone, raise); err != nil {
			return err
		}
	} else if err := g.gemmBlocks(a, b, sig, raised); err != nil {
		return err
	}
	if err := call.Enqueue(ctx, s); err != nil {
		return err
	}
	return s.WaitEvent(g.gemmDone)
}

// gemmBlocks enqueues on the GEMM stream the block GEMMs of an overlapped
// call in consumption order, timed, each followed by its signal (the first
// block, when split, in two GEMMs with the early signal between them);
// raised nil: no signals (a test hook raises them). It records gemmDone at
// the end.
func (g *GemmRS) gemmBlocks(a, b Tensor, sig rs2d.Signals, raised *bool) error {
	gs, rowsPer := g.gemmStream, a.Rows/g.world
	order := g.order
	if g.hooks != nil && g.hooks.order != nil {
		order = g.hooks.order(append([]int(nil), order...))
	}
	if err := g.gemmStart.Record(gs); err != nil {
		return err
	}
	traced := 0
	for _, d := range order {
		if g.hooks != nil && g.hooks.beforeBlock != nil {
			if err := g.hooks.beforeBlock(gs, d); err != nil {
				return err
			}
		}
		spec := g.blockSpec(a, b, d, rowsPer)
		if g.split(sig, a.Rows, d) {
			early := sig.EarlyRows(a.Rows)
			head, tail := splitRows(spec, early)
			if err := g.mm.Gemm(gs, head); err != nil {
				return fmt.Errorf("GEMM of the first %d rows of the block for rank %d: %w", early, d, err)
			}
			if raised != nil {
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
		if raised != nil {
			*raised = true
			if err := sig.Raise(gs, d); err != nil {
				return err
			}
		}
	}
	if err := g.gemmEnd.Record(gs); err != nil {
		return err
	}
	g.timed, g.traced, g.ownTraced = true, traced, false
	return g.gemmDone.Record(gs)
}

// split reports whether the block of destination d of a call of m rows is
// computed in two parts (the first block in consumption order, when the
// context splits it).
func (g *GemmRS) split(sig rs2d.Signals, m, d int) bool {
	return d == g.order[0] && sig.EarlyRows(m) > 0
}

// enqueueSequential: the whole GEMM on s, then call, prepared on the
// sequential context (no signals: it follows the GEMM on s).
func (g *GemmRS) enqueueSequential(ctx context.Context, a, b Tensor, sc Scales, call *rs2d.Call, s device.Stream) error {
	if err := g.gemmWhole(a, b, sc, g.cTensor(a.Rows), s); err != nil {
		call.Skip()
		return err
	}
	return call.Enqueue(ctx, s)
}

// gemmWhole enqueues C = A·B on s, on every SM, between the timing events:
// the own GEMM where it was chosen and can take these operands (with the
// stream-K last wave of the producer's workspace, as the overlapped calls
// run it), else the device's matmul.
func (g *GemmRS) gemmWhole(a, b Tensor, sc Scales, c Tensor, s device.Stream) error {
	if err := g.gemmStart.Record(s); err != nil {
		return err
	}
	if own := g.ownSpec(a, b, sc); g.knobs.Gemm == GemmOwn && own.Check() == nil {
		own.C, own.Workspace = c.Ptr, g.producer.Workspace()
		if err := gemm.Launch(g.dev, s, own); err != nil {
			return err
		}
	} else if err := g.mm.Gemm(s, device.GemmSpec{M: a.Rows, N: g.cfg.N, K: g.cfg.KLocal, A: a.Ptr, B: b.Ptr, C: c.Ptr, DType: g.cfg.DType}); err != nil {
		return err
	}
	if err := g.gemmEnd.Record(s); err != nil {
		return err
	}
	g.timed = true
	return nil
}

// blockSpec is the GEMM of destination rank d's rows.
func (g *GemmRS) blockSpec(a, b Tensor, d, rowsPer int) device.GemmSpec {
	es := int64(g.cfg.DType.Size())
	row0 := int64(d) * int64(rowsPer)
	return device.GemmSpec{
		M: rowsPer, N: g.cfg.N, K: g.cfg.KLocal,
		A: a.Ptr.Add(row0 * int64(g.cfg.KLocal) * es), B: b.Ptr, C: g.cBuf.Add(row0 * int64(g.cfg.N) * es),
		DType: g.cfg.DType,
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

func (g *GemmRS) cTensor(m int) Tensor {
	return Tensor{Ptr: g.cBuf, Rows: m, Cols: g.cfg.N, DType: g.cfg.DType}
}

// checkGemm validates A and B, and that out (when given) overlaps neither,
// before any work is enqueued; the reduce-scatter's own arguments are
// rs2d's to check (Prepare).
func (g *GemmRS) checkGemm(a, b Tensor, sc Scales, out Tensor) error {
	cfg := g.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemmrs: %s: %w", fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	in, bk, bn := cfg.DType, b.Rows, b.Cols // B's K and N
	if g.fp8() {
		in, bk, bn = dtype.E4M3, b.Cols, b.Rows // B is [N, KLocal]
	}
	switch {
	case a.DType != in || b.DType != in:
		return bad("A is %v and B is %v; the GemmRS was made for %v", a.DType, b.DType, in)
	case a.Cols != cfg.KLocal || bk != cfg.KLocal:
		return bad("A has %d columns and B's K is %d; the GemmRS was made for KLocal=%d", a.Cols, bk, cfg.KLocal)
	case bn != cfg.N:
		return bad("B's N is %d; the GemmRS was made for N=%d", bn, cfg.N)
	case !g.fp8() && (sc.A != 0 || sc.B != 0 || sc.Scaling != gemm.PerTensor):
		return bad("scales are for e4m3 inputs (Config.Input)")
	case a.Rows <= 0:
		return bad("M=%d must be positive", a.Rows)
	case a.Rows > cfg.MaxM:
		return bad("M=%d exceeds MaxM=%d", a.Rows, cfg.MaxM)
	case a.Rows%g.world != 0:
		return bad("M=%d is not divisible by world size %d", a.Rows, g.world)
	case a.Ptr == 0 || b.Ptr == 0:
		return bad("nil A or B pointer")
	}
	if g.fp8() { // no other GEMM to fall back to
		if err := g.ownSpec(a, b, sc).CheckOn(g.dev); err != nil { // the scales too
			return fmt.Errorf("gemmrs: %w", err)
		}
	}
	for _, t := range []struct {
		name string
		t    Tensor
	}{{"A", a}, {"B", b}} {
		if err := g.checkRange(t.name, t.t); err != nil {
			return err
		}
		if out.Ptr != 0 && overlaps(out, t.t) {
			return bad("output %v overlaps %s %v", out, t.name, t.t)
		}
	}
	return nil
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

// overlaps reports whether the byte ranges of x and y meet.
func overlaps(x, y Tensor) bool { return device.Overlap(x.Ptr, x.Bytes(), y.Ptr, y.Bytes()) }
