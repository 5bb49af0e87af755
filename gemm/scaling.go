package gemm

import (
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// Scaling is how the scales of fp8 operands apply (Params.Scaling): C is
// the fp32 sum of A's and B's products, each product weighted by the
// scales of the elements it multiplies, rounded once to C's dtype.
type Scaling int

// The scalings: their scales are fp32 in device memory.
const (
	// PerTensor: ScaleA and ScaleB one value each (0: 1):
	// C = sa·sb·(A·Bᵀ), applied in the epilogue (torch._scaled_mm's
	// per-tensor scales).
	PerTensor Scaling = iota
	// RowWise: ScaleA [M] (per row of A), ScaleB [N] (per row of B
	// [N, K], i.e. per column of C): C[m, n] = sa[m]·sb[n]·(A·Bᵀ)[m, n],
	// applied in the epilogue (torch's row-wise scale_a [M, 1] and
	// scale_b [1, N]).
	RowWise
	// BlockWise: ScaleA per 1 × 128 block of A, laid out [ceil(K/128), M]
	// row-major (block (m, kb) at kb·M + m: the memory of torch's M-major
	// [M, K/128] scale_a); ScaleB per 128 × 128 block of B [N, K], laid
	// out [ceil(N/128), ceil(K/128)] row-major (the memory of torch's
	// scale_b, the transpose of a contiguous [N/128, K/128]):
	// C[m, n] = Σ_kb sa[kb, m]·sb[n/128, kb]·Σ_{k in kb} A[m, k]·B[n, k],
	// each 128-deep k tile's sum promoted into the fp32 accumulators with
	// its scales (the kernel's gm_mainloop_block).
	BlockWise
)

// ScaleBlock is the side of a block of BlockWise scaling: 1 × 128 of A,
// 128 × 128 of B (and the fp8 GEMM's k tile).
const ScaleBlock = 128

func (s Scaling) String() string {
	switch s {
	case PerTensor:
		return "tensor"
	case RowWise:
		return "row"
	case BlockWise:
		return "block"
	}
	return fmt.Sprintf("scaling(%d)", int(s))
}

// ParseScaling accepts the names String prints.
func ParseScaling(s string) (Scaling, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "tensor", "per-tensor", "":
		return PerTensor, nil
	case "row", "row-wise", "rowwise":
		return RowWise, nil
	case "block", "block-wise", "blockwise":
		return BlockWise, nil
	}
	return PerTensor, fmt.Errorf("gemm: unknown scaling %q (want tensor, row or block): %w", s, device.ErrInvalidArgument)
}

// ScaleCounts is how many fp32 scales of A and of B a product of m × n × k
// takes with scaling s.
func ScaleCounts(s Scaling, m, n, k int) (a, b int) {
	switch s {
	case RowWise:
		return m, n
	case BlockWise:
		kb := (k + ScaleBlock - 1) / ScaleBlock
		return kb * m, (n + ScaleBlock - 1) / ScaleBlock * kb
	}
	return 1, 1
}

// checkScales reports what is wrong with g's scaling (g dense).
func (g Params) checkScales() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemm: gemm %dx%dx%d: %s: %w", g.M, g.N, g.K, fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case g.Scaling < PerTensor || g.Scaling > BlockWise:
		return bad("unknown scaling %v", g.Scaling)
	case g.Scaling != PerTensor && g.DType != dtype.E4M3:
		return bad("%v scaling is for e4m3 inputs, not %v", g.Scaling, g.DType)
	case g.Scaling != PerTensor && (g.ScaleA == 0 || g.ScaleB == 0):
		return bad("%v scaling needs both scale arrays", g.Scaling)
	case g.ScaleA%4 != 0 || g.ScaleB%4 != 0:
		return bad("scales at %v and %v are not 4-byte aligned fp32", g.ScaleA, g.ScaleB)
	}
	return nil
}
