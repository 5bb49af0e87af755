// Package tune carries the settings the benchmarks sweep and users do not
// set: how many SMs the intra-node reduce takes beside other work, how many
// chunks a node step is cut into, how many NCCL communicators carry a rail,
// the GEMM overlap's split first block and Auto thresholds, and the shape
// of the bounded-memory ring's FIFOs. They travel
// in the context.Context given to rs2d.New and gemmrs.New (With), so the
// public Configs stay what a user of a collective sets; a zero Knobs (no
// With) means every default.
package tune

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Knobs are the tuning settings; 0 (or SplitAuto) picks the default.
type Knobs struct {
	// ReductionSMs bounds the SMs of the intra-node reduce while it runs
	// beside other work: the copy engine's reduce kernels beside a GEMM,
	// the SM engine's reduce blocks beside its push blocks.
	ReductionSMs int
	// Chunks cuts each node step so that its reduction overlaps its
	// scatter (0: by size; 1 with GEMM overlap).
	Chunks int
	// RailLanes is, with the NCCL rail transport, how many communicators
	// per rail carry each block in parallel.
	RailLanes int
	// SplitFirstBlock is whether the overlapped GEMM computes the first
	// block in consumption order in two halves with the early signal
	// between them, so the copy engine starts half a block sooner.
	SplitFirstBlock Split
	// Segments is, with GEMM overlap, how many signals each destination's
	// rows come in (0: one; at most MaxSegments), for a producer that
	// finishes rows finer than a block (gemmrs's own GEMM).
	Segments int
	// Help is, for gemmrs's own GEMM on one node, the percentage of the
	// last peer's block that the producer's SMs push after the GEMM,
	// beside the copy engine (rs2d Call.Help): 0 lets gemmrs.HelpRows
	// estimate it, negative is none.
	Help int
	// Gemm is gemmrs's GEMM: its own (gemm.Launch), the device's
	// matmul (cuBLAS), or Auto (the own GEMM where every rank can run it
	// and measured it at least as fast as cuBLAS at the context's shape).
	Gemm Gemm
	// AutoMinFLOP and AutoMinRowsPerRank are the thresholds below which
	// gemmrs's Auto mode runs the GEMM then the reduce-scatter instead of
	// overlapping them.
	AutoMinFLOP        float64
	AutoMinRowsPerRank int
	// RingSlots, RingChunkBytes and RingChannels shape the bounded-memory
	// ring's FIFOs: slots per node peer, bytes per slot (one chunk), and
	// independent rings (one thread block each). A chunk size left at 0
	// shrinks to fit Config.MaxSymmetricBytes.
	RingSlots      int
	RingChunkBytes int64
	RingChannels   int
}

// Split is a choice of Knobs.SplitFirstBlock.
type Split int

// The choices: Auto lets gemmrs decide (rs2d reads it as Off).
const (
	SplitAuto Split = iota
	SplitOff
	SplitOn
)

func (s Split) String() string {
	switch s {
	case SplitAuto:
		return "auto"
	case SplitOff:
		return "off"
	case SplitOn:
		return "on"
	}
	return fmt.Sprintf("split(%d)", int(s))
}

// ParseSplit parses auto, on or off.
func ParseSplit(s string) (Split, error) {
	for _, v := range []Split{SplitAuto, SplitOff, SplitOn} {
		if s == v.String() {
			return v, nil
		}
	}
	return SplitAuto, fmt.Errorf("split %q: want auto, on or off: %w", s, hcerr.ErrInvalidArgument)
}

// Gemm is a choice of Knobs.Gemm.
type Gemm int

// The choices.
const (
	GemmAuto Gemm = iota
	GemmOwn
	GemmCuBLAS
)

func (g Gemm) String() string {
	switch g {
	case GemmAuto:
		return "auto"
	case GemmOwn:
		return "own"
	case GemmCuBLAS:
		return "cublas"
	}
	return fmt.Sprintf("gemm(%d)", int(g))
}

// ParseGemm parses auto, own or cublas.
func ParseGemm(s string) (Gemm, error) {
	for _, v := range []Gemm{GemmAuto, GemmOwn, GemmCuBLAS} {
		if s == v.String() {
			return v, nil
		}
	}
	return GemmAuto, fmt.Errorf("gemm %q: want auto, own or cublas: %w", s, hcerr.ErrInvalidArgument)
}

type key struct{}

// With returns ctx carrying k for the constructors called with it.
func With(ctx context.Context, k Knobs) context.Context { return context.WithValue(ctx, key{}, k) }

// From returns the knobs ctx carries (the zero Knobs when none).
func From(ctx context.Context) Knobs {
	k, _ := ctx.Value(key{}).(Knobs)
	return k
}

// MaxSegments bounds Knobs.Segments.
const MaxSegments = 64

// DefaultReductionSMs is ReductionSMs's default beside a GEMM (the copy
// engine); beside the SM engine's pushes the reduce takes twice as many,
// which keeps up with them.
const DefaultReductionSMs = 16

// ReductionSMsOf is the reduce's SM budget k gives on a device of sms SMs
// (0: unknown), beside the SM engine's pushes (smEngine) or a GEMM.
func ReductionSMsOf(k Knobs, smEngine bool, sms int) int {
	n := k.ReductionSMs
	if n <= 0 {
		n = DefaultReductionSMs
		if smEngine {
			n *= 2
		}
	}
	if sms > 0 {
		n = min(n, sms)
	}
	return n
}
