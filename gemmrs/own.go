package gemmrs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// The own GEMM as the producer. One launch of gemm.Launch computes
// all of C, its row tiles in the scatter's consumption order, and raises
// the signal of each segment of a destination's rows (rs2d
// Signals.SegmentAddr) as soon as the segment's tiles are stored, so the
// copy engine starts on a destination's rows before the whole block is
// done, and no GEMM is cut into blocks.

// ownSpec is the own GEMM's product C[:M] = A·B for a call (fp8: times
// the scales, B [N, KLocal]).
func (g *GemmRS) ownSpec(a, b Tensor, sc Scales) gemm.Params {
	spec := gemm.Params{GemmSpec: device.GemmSpec{M: a.Rows, N: g.cfg.N, K: g.cfg.KLocal, A: a.Ptr, B: b.Ptr, C: g.cBuf, DType: g.cfg.DType}}
	if g.fp8() {
		spec.DType, spec.Out, spec.BT = dtype.E4M3, g.cfg.DType, true
		spec.Scaling, spec.ScaleA, spec.ScaleB = sc.Scaling, sc.A, sc.B
	}
	return spec
}

// fp8 reports whether A and B are e4m3 (Config.Input).
func (g *GemmRS) fp8() bool { return g.cfg.Input == dtype.E4M3 }

// Scales are the scales of fp8 operands (RunScaled): device addresses of
// fp32 laid out as Scaling says (gemm.Scaling: per tensor one value each,
// 0 being 1; row-wise A's [M] and B's [N]; block-wise A's per 1 × 128
// block, [ceil(KLocal/128), M], and B's per 128 × 128 block of the
// [N, KLocal] weight, [ceil(N/128), ceil(KLocal/128)]).
type Scales struct {
	Scaling gemm.Scaling
	A, B    device.Ptr
}

// GemmChoice reports which GEMM the GemmRS computes with: GemmOwn or
// GemmCuBLAS (the device's matmul), as every rank agreed in New, and
// why.
func (g *GemmRS) GemmChoice() (Gemm, string) { return g.knobs.Gemm, g.why }

// Summed reports whether the last overlapped call's own GEMM summed this
// rank's own block of C with the node peers' landed blocks in its epilogue
// (gemm.Sum: one node, the copy engine, blocks of whole row tiles), instead
// of a reduction pass after the GEMM.
func (g *GemmRS) Summed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ovl != nil && g.ovl.Summed()
}

// Segments is how many signals each destination's rows come in.
func (g *GemmRS) Segments() int { return max(1, g.knobs.ReduceScatter.Segments) }

// chooseGemm is this rank's vote for the own GEMM (see Tuning.Gemm):
// whether it asks for it or Auto finds it at least as fast as the device's
// matmul at the MaxM product, with the reason. Asking for it where it cannot
// run is an error.
func (g *GemmRS) chooseGemm(ctx context.Context) (bool, string, error) {
	if g.knobs.Gemm == GemmCuBLAS {
		return false, "asked for", nil
	}
	spec := g.ownSpec(Tensor{Ptr: 256, Rows: g.cfg.MaxM}, Tensor{Ptr: 256}, Scales{})
	spec.C = 256
	err := spec.Check()
	if err == nil {
		err = gemm.Prepare(g.dev, g.cfg.DType)
	}
	switch {
	case err != nil && g.fp8():
		return false, "", fmt.Errorf("e4m3 inputs need the own GEMM, which cannot compute this product here: %w", err)
	case g.fp8():
		return true, "e4m3 inputs: only the own GEMM takes them", nil
	case err != nil && g.knobs.Gemm == GemmOwn:
		return false, "", fmt.Errorf("the own GEMM cannot compute this product: %w", err)
	case err != nil:
		return false, fmt.Sprintf("the own GEMM cannot compute it (%v)", err), nil
	case g.knobs.Gemm == GemmOwn:
		return true, "asked for", nil
	case g.dev.Info().Backend != "cuda":
		return true, "the CPU backend runs the own GEMM's reference twin", nil
	}
	own, mm, err := g.timeGemms(ctx)
	if err != nil {
		return false, "", fmt.Errorf("timing the GEMMs: %w", err)
	}
	why := fmt.Sprintf("measured at %dx%dx%d: own %v, cuBLAS %v", g.cfg.MaxM, g.cfg.N, g.cfg.KLocal, own, mm)
	return own <= mm, why, nil
}

// timeGemms times the own GEMM and the device's matmul at the MaxM product
// on the GEMM stream, in turn, over three rounds of three calls each, on
// scratch inputs of ones, and returns each one's median time per call.
func (g *GemmRS) timeGemms(ctx context.Context) (own, mm time.Duration, err error) {
	cfg, es := g.cfg, int64(g.cfg.DType.Size())
	a, err := g.dev.Alloc(int64(cfg.MaxM) * int64(cfg.KLocal) * es)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, g.dev.Free(a)) }()
	b, err := g.dev.Alloc(int64(cfg.KLocal) * int64(cfg.N) * es)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, g.dev.Free(b)) }()
	one := uint32(0x3c003c00) // fp16 1.0, twice
	if cfg.DType == dtype.BF16 {
		one = 0x3f803f80
	}
	s := g.gemmStream
	for _, p := range []struct {
		ptr   device.Ptr
		bytes int64
	}{{a, int64(cfg.MaxM) * int64(cfg.KLocal) * es}, {b, int64(cfg.KLocal) * int64(cfg.N) * es}} {
		if err := g.dev.Memset32(s, p.ptr, one, p.bytes/4); err != nil {
			return 0, 0, err
		}
	}
	spec := g.ownSpec(Tensor{Ptr: a, Rows: cfg.MaxM}, Tensor{Ptr: b}, Scales{})
	spec.Workspace = g.producer.Workspace() // as the calls will run it
	ref := device.GemmSpec{M: cfg.MaxM, N: cfg.N, K: cfg.KLocal, A: a, B: b, C: g.cBuf, DType: cfg.DType}
	const rounds, calls = 3, 3
	var owns, mms []time.Duration
	for round := 0; round <= rounds; round++ { // round 0 warms up
		for _, x := range []struct {
			run func() error
			ds  *[]time.Duration
		}{{func() error { return gemm.Launch(g.dev, s, spec) }, &owns}, {func() error { return g.mm.Gemm(s, ref) }, &mms}} {
			d, err := g.timeOnGemmStream(ctx, calls, x.run)
			if err != nil {
				return 0, 0, err
			}
			if round > 0 {
				*x.ds = append(*x.ds, d)
			}
		}
	}
	return median(owns), median(mms), nil
}

// timeOnGemmStream times calls runs of run on the GEMM stream (per call).
func (g *GemmRS) timeOnGemmStream(ctx context.Context, calls int, run func() error) (time.Duration, error) {
	s := g.gemmStream
	if err := g.gemmStart.Record(s); err != nil {
		return 0, err
	}
	for range calls {
		if err := run(); err != nil {
			return 0, err
		}
	}
	if err := g.gemmEnd.Record(s); err != nil {
		return 0, err
	}
	if err := s.Synchronize(ctx); err != nil {
		return 0, err
	}
	d, err := g.gemmEnd.Since(g.gemmStart)
	return d / time.Duration(calls), err
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
