package device

import (
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/dtype"
)

// Matmul is the optional capability of a Device to multiply matrices on a
// stream: what a GEMM producer (the row-parallel linear layer before a
// reduce-scatter) needs. It is not part of Device on purpose: a collective
// needs none of it, and a backend that cannot multiply stays a Device.
// Obtain it with MatmulOf.
type Matmul interface {
	// Gemm enqueues C = A·B on s as described by g. Arguments are checked
	// before anything is enqueued; a backend whose library is missing
	// returns an error wrapping ErrNotSupported.
	Gemm(s Stream, g GemmSpec) error
}

// MatmulOf returns d's Matmul, or an error wrapping ErrNotSupported naming
// the device when its backend has none.
func MatmulOf(d Device) (Matmul, error) {
	if m, ok := d.(Matmul); ok {
		return m, nil
	}
	return nil, fmt.Errorf("device: %s cannot multiply matrices (no Matmul): %w", d.Name(), ErrNotSupported)
}

// MatmulLibrary names the library behind m ("cuBLAS 13.1.0 (path)"), where
// the backend says (a Library() string method), else "".
func MatmulLibrary(m Matmul) string {
	if l, ok := m.(interface{ Library() string }); ok {
		return l.Library()
	}
	return ""
}

// GemmSpec is one row-major matrix product C = A·B: A is [M, K], B is
// [K, N] (or, with BT, given as its transpose [N, K]: a torch Linear
// weight), C is [M, N], all of DType, where row i of a matrix X starts LDX
// elements after row i-1 (a leading dimension of 0 means dense: K for A, N
// for B, K for BT's B, N for C). Products are accumulated in fp32 and C is
// rounded to DType once; C must not overlap A or B.
type GemmSpec struct {
	M, N, K       int
	A, B, C       Ptr
	LDA, LDB, LDC int
	BT            bool
	DType         dtype.DType
	// SMs asks the GEMM to target at most this many multiprocessors, leaving
	// the rest to work that runs beside it (0: all). Best effort: the CUDA
	// backend passes it to cublasSetSmCountTarget where cuBLAS has it; the
	// CPU backend bounds its workers.
	SMs int
}

// Dense returns g with zero leading dimensions replaced by the dense ones.
func (g GemmSpec) Dense() GemmSpec {
	if g.LDA == 0 {
		g.LDA = g.K
	}
	if g.LDB == 0 {
		g.LDB = g.N
		if g.BT {
			g.LDB = g.K
		}
	}
	if g.LDC == 0 {
		g.LDC = g.N
	}
	return g
}

// Check validates g (after Dense): positive sizes that fit the 32-bit
// integers BLAS libraries take, leading dimensions at least the row
// lengths, non-nil pointers, a supported dtype (bf16, fp16, fp32) and an SM
// target that is not negative.
func (g GemmSpec) Check() error {
	g = g.Dense()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("device: gemm %dx%dx%d: %s: %w", g.M, g.N, g.K, fmt.Sprintf(format, args...), ErrInvalidArgument)
	}
	switch {
	case g.M <= 0 || g.N <= 0 || g.K <= 0:
		return bad("sizes must be positive")
	case g.M > math.MaxInt32 || g.N > math.MaxInt32 || g.K > math.MaxInt32:
		return bad("sizes must fit in 32 bits")
	case g.LDA < g.K || g.LDB < g.bRow() || g.LDC < g.N:
		return bad("leading dimensions LDA=%d, LDB=%d, LDC=%d are shorter than the rows (%d, %d, %d)", g.LDA, g.LDB, g.LDC, g.K, g.bRow(), g.N)
	case g.LDA > math.MaxInt32 || g.LDB > math.MaxInt32 || g.LDC > math.MaxInt32:
		return bad("leading dimensions must fit in 32 bits")
	case g.A == 0 || g.B == 0 || g.C == 0:
		return bad("nil matrix pointer")
	case g.SMs < 0:
		return bad("negative SM target %d", g.SMs)
	}
	switch g.DType {
	case dtype.BF16, dtype.F16, dtype.F32:
	default:
		return fmt.Errorf("device: gemm of %v: only bf16, fp16 and fp32 are supported: %w", g.DType, ErrNotSupported)
	}
	return nil
}

// Extent returns the bytes of A, B and C the product touches, from their
// first element to their last.
func (g GemmSpec) Extent() (a, b, c int64) {
	g = g.Dense()
	es := int64(g.DType.Size())
	span := func(rows, cols, ld int) int64 { return (int64(rows-1)*int64(ld) + int64(cols)) * es }
	if g.BT {
		return span(g.M, g.K, g.LDA), span(g.N, g.K, g.LDB), span(g.M, g.N, g.LDC)
	}
	return span(g.M, g.K, g.LDA), span(g.K, g.N, g.LDB), span(g.M, g.N, g.LDC)
}

// bRow is the length of B's rows as stored: K for BT, else N.
func (g GemmSpec) bRow() int {
	if g.BT {
		return g.K
	}
	return g.N
}
