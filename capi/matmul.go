package main

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	owngemm "github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/internal/producer"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// The layouts of B as hiercoll.h defines them (HC_B_KN, HC_B_NK; main.go
// checks them against the header).
const (
	layoutKN = 0
	layoutNK = 1
)

// The scalings as hiercoll.h defines them (HC_SCALE_TENSOR, HC_SCALE_ROW,
// HC_SCALE_BLOCK; main.go checks them against the header).
const (
	scaleTensor = 0
	scaleRow    = 1
	scaleBlock  = 2
)

// scalingOf is the own GEMM's scaling of an HC_SCALE_* code.
func scalingOf(s int) (owngemm.Scaling, error) {
	switch s {
	case scaleTensor:
		return owngemm.PerTensor, nil
	case scaleRow:
		return owngemm.RowWise, nil
	case scaleBlock:
		return owngemm.BlockWise, nil
	}
	return 0, fmt.Errorf("hiercoll: scaling %d is not HC_SCALE_TENSOR (0), HC_SCALE_ROW (1) or HC_SCALE_BLOCK (2): %w", s, device.ErrInvalidArgument)
}

// bLayout is the own GEMM's layout of HC_B_KN or HC_B_NK.
func bLayout(l int) (owngemm.BLayout, error) {
	switch l {
	case layoutKN:
		return owngemm.BKN, nil
	case layoutNK:
		return owngemm.BNK, nil
	}
	return 0, fmt.Errorf("hiercoll: b_layout %d is not HC_B_KN (0) or HC_B_NK (1): %w", l, device.ErrInvalidArgument)
}

// matmul returns the context's overlapped own GEMM (what
// hc_rs2d_matmul_reduce_scatter adds to an overlap context), making it at
// the first call (the own GEMM's kernels loaded, which fails where the
// device cannot run them); a failure is kept and returned again.
//
// A GEMM that failed on the GEMM stream (whose errors are sticky) is this
// call's error, naming the failed call (producer.Overlapped.Recover): the
// stream is replaced, so that the next call runs, or, where it cannot be,
// every later call says the context is broken. The check queries an event,
// which a stream capture forbids: a call on a stream s being captured skips
// it (the next call outside the capture makes it).
func (c *rs2dObj) matmul(s device.Stream) (*producer.Overlapped, error) {
	c.mmMu.Lock()
	defer c.mmMu.Unlock()
	if c.mm != nil {
		capturing, err := device.Capturing(s)
		if err == nil && !capturing {
			err = c.mm.Recover()
		}
		if err != nil {
			return nil, err
		}
	}
	if c.mm != nil || c.mmErr != nil {
		return c.mm, c.mmErr
	}
	dev := c.owner.rank.Dev
	err := owngemm.Prepare(dev, c.dt)
	var o *producer.Overlapped
	if err == nil {
		o, err = producer.NewOverlapped(dev, c.world)
	}
	if err != nil {
		c.mmErr = fmt.Errorf("hiercoll: the own GEMM: %w", err)
		return nil, c.mmErr
	}
	c.mm = o
	return o, nil
}

// matmulArgs are hc_rs2d_matmul_reduce_scatter's operands, and
// hc_rs2d_scaled_matmul_reduce_scatter's (and _ex's): in is a's and b's
// dtype (0: the context's), scaleA and scaleB their fp32 scales (e4m3) as
// scaling (HC_SCALE_*) lays them out.
type matmulArgs struct {
	a, b, c, out   uint64
	lda, ldb, m, k int64
	layout         int
	in             dtype.DType
	scaling        int
	scaleA, scaleB uint64
}

// matmulReduceScatter is hc_rs2d_matmul_reduce_scatter: on context h (made
// with GEMM overlap), c[:m] = a·b by the own GEMM on the context's GEMM
// stream after stream's earlier work, each segment of a destination's rows
// signalled as it is stored, and the reduce-scatter of c into out on
// stream, which then waits for the GEMM; or, for a small product
// (sequentialFor), the GEMM on stream and then the reduce-scatter of c by
// the small products' context (in place where c is its input,
// hc_rs2d_input). What the own GEMM cannot compute fails with
// ErrNotSupported before anything is enqueued.
func matmulReduceScatter(h int64, x matmulArgs, stream uint64) error {
	c, s, err := contextAndStream(h, stream)
	if err != nil {
		return err
	}
	switch {
	case !c.rs.Config().OverlapWithGEMM:
		return fmt.Errorf("hiercoll: matmul + reduce-scatter needs a context made with HC_OVERLAP_WITH_GEMM: %w", device.ErrInvalidArgument)
	case x.m <= 0 || x.m > maxDim || x.k <= 0 || x.k > maxDim || x.lda < 0 || x.lda > maxDim || x.ldb < 0 || x.ldb > maxDim:
		return fmt.Errorf("hiercoll: m=%d, k=%d must be positive and lda=%d, ldb=%d not negative (all below 2^40): %w", x.m, x.k, x.lda, x.ldb, device.ErrInvalidArgument)
	}
	layout, err := bLayout(x.layout)
	if err != nil {
		return err
	}
	scaling, err := scalingOf(x.scaling)
	if err != nil {
		return err
	}
	in := x.in
	if in == dtype.Invalid {
		in = c.dt
	}
	spec := owngemm.Params{GemmSpec: device.GemmSpec{M: int(x.m), N: c.n, K: int(x.k), A: device.Ptr(x.a), B: device.Ptr(x.b), C: device.Ptr(x.c),
		LDA: int(x.lda), LDB: int(x.ldb), DType: in, BT: layout == owngemm.BNK}, Out: c.dt,
		Scaling: scaling, ScaleA: device.Ptr(x.scaleA), ScaleB: device.Ptr(x.scaleB)}
	if err := spec.CheckOn(c.owner.rank.Dev); err != nil {
		return fmt.Errorf("hiercoll: %w", err)
	}
	if err := spec.CheckMemory(c.owner.rank.Dev); err != nil {
		return fmt.Errorf("hiercoll: %w", err)
	}
	st, err := c.matmul(s)
	if err != nil {
		return err
	}
	cT := rs2d.Tensor{Ptr: device.Ptr(x.c), Rows: int(x.m), Cols: c.n, DType: c.dt}
	out := rs2d.Tensor{Ptr: device.Ptr(x.out), Rows: int(x.m) / c.world, Cols: c.n, DType: c.dt}
	if c.seq != nil && sequentialFor(int(x.m), c.n, int(x.k), c.world) {
		call, err := c.seq.Prepare(cT, out)
		if err != nil {
			return err
		}
		spec.Workspace = st.Producer().Workspace()
		if err := owngemm.Launch(c.owner.rank.Dev, s, spec); err != nil {
			call.Skip()
			return fmt.Errorf("hiercoll: %w", err)
		}
		return call.Enqueue(context.Background(), s)
	}
	call, err := c.rs.Prepare(cT, out)
	if err != nil {
		return err
	}
	many := producer.SumsMany(int(x.k), int(x.m)/c.world) // the default rule: the C ABI has no knob for it
	_, err = st.Enqueue(context.Background(), s, spec, c.rs.ConsumptionOrder(), call, 0, many)
	return err
}

// sequentialFor reports whether hc_rs2d_matmul_reduce_scatter runs a
// product of m x n rows of k per rank over world ranks as the GEMM then the
// reduce-scatter rather than overlapped: where gemmrs's Auto does (too
// little work per rank to hide the copy engine's latencies). A variable,
// so that the tests can hold calls to either path.
var sequentialFor = func(m, n, k, world int) bool {
	return gemmrs.AutoModeFor(m, n, k, world) == gemmrs.Sequential
}

// gemmArgs are hc_gemm's and hc_gemm_ex's operands (in, out and scaling
// as HC_* codes).
type gemmArgs struct {
	in, out, layout, scaling  int
	a, b, c                   uint64
	scaleA, scaleB, workspace uint64
	lda, ldb, ldc, m, n, k    int64
}

// gemm is hc_gemm: c = a·b (times the scales, e4m3) by the own GEMM on
// stream of rank h's device, its last wave stream-K where a workspace is
// given. What the own GEMM cannot compute fails with ErrNotSupported
// before anything is enqueued.
func gemm(h int64, x gemmArgs, stream uint64) error {
	in, inOK := dtypes[x.in]
	out, outOK := dtypes[x.out]
	switch {
	case !inOK || (in != dtype.BF16 && in != dtype.F16 && in != dtype.E4M3):
		return fmt.Errorf("hiercoll: a_dtype %d is not HC_BF16 (1), HC_F16 (2) or HC_E4M3 (5): %w", x.in, device.ErrInvalidArgument)
	case !outOK || (out != dtype.BF16 && out != dtype.F16):
		return fmt.Errorf("hiercoll: c_dtype %d is not HC_BF16 (1) or HC_F16 (2): %w", x.out, device.ErrInvalidArgument)
	case x.m <= 0 || x.m > maxDim || x.n <= 0 || x.n > maxDim || x.k <= 0 || x.k > maxDim:
		return fmt.Errorf("hiercoll: m=%d, n=%d, k=%d must be positive (and below 2^40): %w", x.m, x.n, x.k, device.ErrInvalidArgument)
	case x.lda < 0 || x.lda > maxDim || x.ldb < 0 || x.ldb > maxDim || x.ldc < 0 || x.ldc > maxDim:
		return fmt.Errorf("hiercoll: lda=%d, ldb=%d, ldc=%d must not be negative (and below 2^40): %w", x.lda, x.ldb, x.ldc, device.ErrInvalidArgument)
	}
	layout, err := bLayout(x.layout)
	if err != nil {
		return err
	}
	scaling, err := scalingOf(x.scaling)
	if err != nil {
		return err
	}
	r, s, err := rankStream(h, stream)
	if err != nil {
		return err
	}
	spec := owngemm.Params{GemmSpec: device.GemmSpec{M: int(x.m), N: int(x.n), K: int(x.k), A: device.Ptr(x.a), B: device.Ptr(x.b), C: device.Ptr(x.c),
		LDA: int(x.lda), LDB: int(x.ldb), LDC: int(x.ldc), DType: in, BT: layout == owngemm.BNK}, Out: out,
		Scaling: scaling, ScaleA: device.Ptr(x.scaleA), ScaleB: device.Ptr(x.scaleB), Workspace: device.Ptr(x.workspace)}
	if err := owngemm.Launch(r.rank.Dev, s, spec); err != nil {
		return fmt.Errorf("hiercoll: %w", err)
	}
	return nil
}

// gemmWorkspaceBytes is hc_gemm_workspace_bytes: the size of a workspace
// for hc_gemm on rank h's device.
func gemmWorkspaceBytes(h int64) (int64, error) {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return 0, err
	}
	return owngemm.WorkspaceBytes(r.rank.Dev.Info().SMs), nil
}
