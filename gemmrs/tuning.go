package gemmrs

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// Tuning are the settings benchmarks sweep and most users leave alone; the
// zero Tuning is every default. Every rank passes the same.
type Tuning struct {
	// ReduceScatter tunes the reduce-scatter context (its SplitFirstBlock
	// is set from SplitFirstBlock below, and its Segments, left at 0, by
	// the own GEMM: about one per 1024 rows of a block, at most 8).
	ReduceScatter rs2d.Tuning
	// SplitFirstBlock is whether the block-by-block producer computes the
	// first block in consumption order in two halves with the early signal
	// between them, so the copy engine starts half a block sooner (Auto:
	// on one node below SplitAutoMaxKLocal).
	SplitFirstBlock Split
	// Gemm is the GEMM: the own one (gemm.Launch), the device's matmul
	// (cuBLAS), or Auto (the own GEMM where every rank can run it and
	// measured it at least as fast as cuBLAS at the context's shape).
	Gemm Gemm
	// SumOwnBlock is whether the own GEMM sums the own block in its
	// epilogue on one node of three or more ranks, instead of a reduce pass
	// after it (on two ranks it always does): Auto where SumsManyBlocks
	// says.
	SumOwnBlock Split
	// Help is, for the own GEMM on one node, the percentage of the last
	// peer's block that the producer's SMs push after the GEMM, beside the
	// copy engine (rs2d Call.Help): 0 estimates it from the GEMM's and the
	// copies' rates, negative is none.
	Help int
}

// Split is a choice of Tuning.SplitFirstBlock, and of Tuning.SumOwnBlock.
type Split int

// The choices: Auto lets the GemmRS decide.
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
	return SplitAuto, fmt.Errorf("split %q: want auto, on or off: %w", s, device.ErrInvalidArgument)
}

// Gemm is a choice of Tuning.Gemm, and what GemmChoice reports.
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
	return GemmAuto, fmt.Errorf("gemm %q: want auto, own or cublas: %w", s, device.ErrInvalidArgument)
}

// rs2dTuning is the reduce-scatter context's tuning in effect.
func (t Tuning) rs2dTuning() rs2d.Tuning {
	r := t.ReduceScatter
	r.SplitFirstBlock = t.SplitFirstBlock == SplitOn
	return r
}
