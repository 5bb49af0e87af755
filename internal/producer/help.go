package producer

import (
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// Help (rs2d Call.Help): on one node the copy engine sends a GPU's blocks
// for its world-1 peers one after another, each once its first segment is
// computed. Where the GEMM is short against those copies (8192³ on 4 GPUs,
// and fp8, which halves the GEMM but not the bytes) the chain is still
// sending the last peer's block when the GEMM ends and the SMs fall idle;
// the producer's SMs then push the last part of that block (at about
// pushRate, beside the copy engine), so that both end together.
//
// The estimate's rates, measured on 4× H200 at the overlap shapes
// (benchmarks/RESULTS.md, 2026-11-26 GEMM + RS traces); other GPUs scale
// them roughly together:
const (
	helpCopyRate = 215e9   // bytes/s of the copy engine into a peer beside the GEMM
	helpPushRate = 350e9   // bytes/s of SM stores into a peer
	helpGemmRate = 700e12  // FLOP/s of the own GEMM, bf16 / fp16 inputs
	helpFP8Rate  = 1300e12 // FLOP/s of the own GEMM, e4m3 inputs
)

// HelpRows is how many rows at the end of the last peer's block the
// producer of a call with the own GEMM spec (its M rows over world ranks,
// signalled in segments per destination) pushes with its SMs: pct percent
// of the block when pct > 0, none when pct < 0, else the estimate above.
func HelpRows(spec gemm.Params, world, segments, pct int) int {
	if world < 2 {
		return 0
	}
	rowsPer := spec.M / world
	switch {
	case pct < 0:
		return 0
	case pct > 0:
		return rowsPer * min(pct, 100) / 100
	}
	out := spec.Out
	if out == dtype.Invalid {
		out = spec.DType
	}
	rate := helpGemmRate
	if spec.DType == dtype.E4M3 {
		rate = helpFP8Rate
	}
	gemm := 2 * float64(spec.M) * float64(spec.N) * float64(spec.K) / rate
	block := float64(rowsPer) * float64(spec.N) * float64(out.Size())
	// The chain starts once the first segment is computed.
	chain := gemm/float64(world*max(1, segments)) + float64(world-1)*block/helpCopyRate
	tail := chain - gemm
	if tail <= 0 {
		return 0
	}
	f := min(1, tail/(block/helpCopyRate+block/helpPushRate))
	return int(f * float64(rowsPer))
}
