package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// The layouts of B as hiercoll.h defines them (HC_B_KN, HC_B_NK; main.go
// checks them against the header).
const (
	layoutKN = 0
	layoutNK = 1
)

// bLayout is the kernels' layout of HC_B_KN or HC_B_NK.
func bLayout(l int) (kernels.BLayout, error) {
	switch l {
	case layoutKN:
		return kernels.BKN, nil
	case layoutNK:
		return kernels.BNK, nil
	}
	return 0, fmt.Errorf("hiercoll: b_layout %d is not HC_B_KN (0) or HC_B_NK (1): %w", l, device.ErrInvalidArgument)
}

// matmulState is what hc_rs2d_matmul_reduce_scatter adds to an overlap
// context at its first call: the own GEMM's producer, the stream it runs on
// and the events that join it to the caller's stream.
type matmulState struct {
	producer *gemmrs.Producer
	gemm     device.Stream
	ready    device.Event // the caller's stream: A, B and C may be used
	done     device.Event // the GEMM stream: the GEMM finished
	calls    uint64       // calls whose GEMM was enqueued; done marks the last one's
}

// matmul returns the context's matmul state, making it at the first call
// (the own GEMM's kernels loaded, which fails where the device cannot run
// them); a failure is kept and returned again.
//
// A GEMM that failed on the GEMM stream (whose errors are sticky) is this
// call's error, naming the failed call: the stream is replaced, so that the
// next call runs, or, where it cannot be, the context is broken and every
// later call says so.
func (c *rs2dObj) matmul() (*matmulState, error) {
	c.mmMu.Lock()
	defer c.mmMu.Unlock()
	if c.mm != nil {
		if err := c.mm.recover(c.owner.rank.Dev); err != nil {
			return nil, err
		}
	}
	if c.mm != nil || c.mmErr != nil {
		return c.mm, c.mmErr
	}
	dev := c.owner.rank.Dev
	st := &matmulState{}
	err := kernels.PrepareGemm(dev, c.dt)
	if err == nil {
		st.producer, err = gemmrs.NewProducer(dev, c.world)
	}
	if err == nil {
		st.gemm, err = dev.NewStream(device.Normal)
	}
	if err == nil {
		st.ready, err = dev.NewEvent()
	}
	if err == nil {
		st.done, err = dev.NewEvent()
	}
	if err != nil {
		c.mmErr = errors.Join(fmt.Errorf("hiercoll: the own GEMM: %w", err), st.close())
		return nil, c.mmErr
	}
	c.mm = st
	return st, nil
}

// recover checks whether the last call's GEMM failed; if it did, it
// replaces the GEMM stream and returns an error naming that call and why.
// A GEMM stream that cannot be replaced leaves the context broken: matmul
// then returns the error at every later call.
func (st *matmulState) recover(dev device.Device) error {
	if st.gemm == nil {
		return fmt.Errorf("hiercoll: the own GEMM's stream is gone after an earlier failure; destroy the context: %w", device.ErrClosed)
	}
	finished, failed := st.done.Done()
	if !finished || failed == nil {
		return nil
	}
	cause := fmt.Errorf("hiercoll: the own GEMM of matmul + reduce-scatter call %d on this context failed on its stream (that call's output is not valid): %w", st.calls, failed)
	err := st.gemm.Close()
	st.gemm = nil
	var fresh device.Stream
	if err == nil {
		fresh, err = dev.NewStream(device.Normal)
	}
	if err == nil {
		// A record on the new stream clears the failure that done carries.
		err = st.done.Record(fresh)
	}
	if err != nil {
		if fresh != nil {
			err = errors.Join(err, fresh.Close())
		}
		return errors.Join(cause, fmt.Errorf("hiercoll: the GEMM stream could not be replaced, so the context is broken: %w", err))
	}
	st.gemm = fresh
	return fmt.Errorf("%w; the GEMM stream is replaced and the next call may proceed", cause)
}

// close releases what matmul made; the context's work must be done.
func (st *matmulState) close() error {
	var errs []error
	if st.producer != nil {
		errs = append(errs, st.producer.Close())
	}
	for _, e := range []device.Event{st.ready, st.done} {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	if st.gemm != nil {
		errs = append(errs, st.gemm.Close())
	}
	return errors.Join(errs...)
}

// matmulArgs are hc_rs2d_matmul_reduce_scatter's operands, and
// hc_rs2d_scaled_matmul_reduce_scatter's: in is a's and b's dtype (0: the
// context's), scaleA and scaleB their fp32 scales (e4m3).
type matmulArgs struct {
	a, b, c, out   uint64
	lda, ldb, m, k int64
	layout         int
	in             dtype.DType
	scaleA, scaleB uint64
}

// matmulReduceScatter is hc_rs2d_matmul_reduce_scatter: on context h (made
// with GEMM overlap), c[:m] = a·b by the own GEMM on the context's GEMM
// stream after stream's earlier work, each segment of a destination's rows
// signalled as it is stored, and the reduce-scatter of c into out on
// stream, which then waits for the GEMM. What the own GEMM cannot compute
// fails with ErrNotSupported before anything is enqueued.
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
	in := x.in
	if in == dtype.Invalid {
		in = c.dt
	}
	spec := kernels.Gemm{M: int(x.m), N: c.n, K: int(x.k), A: device.Ptr(x.a), B: device.Ptr(x.b), C: device.Ptr(x.c),
		LDA: int(x.lda), LDB: int(x.ldb), DType: in, Out: c.dt, Layout: layout,
		ScaleA: device.Ptr(x.scaleA), ScaleB: device.Ptr(x.scaleB)}
	if err := spec.Check(); err != nil {
		return fmt.Errorf("hiercoll: %w", err)
	}
	if err := spec.CheckMemory(c.owner.rank.Dev); err != nil {
		return fmt.Errorf("hiercoll: %w", err)
	}
	st, err := c.matmul()
	if err != nil {
		return err
	}
	cT := rs2d.Tensor{Ptr: device.Ptr(x.c), Rows: int(x.m), Cols: c.n, DType: c.dt}
	out := rs2d.Tensor{Ptr: device.Ptr(x.out), Rows: int(x.m) / c.world, Cols: c.n, DType: c.dt}
	call, err := c.rs.Prepare(cT, out)
	if err != nil {
		return err
	}
	if err := st.enqueueGemm(s, spec, c.rs.ConsumptionOrder(), call.Signals()); err != nil {
		call.Skip() // whatever the GEMM raised releases nothing later
		return errors.Join(err, s.WaitEvent(st.done))
	}
	if err := call.Help(st.gemm, gemmrs.HelpRows(spec, c.world, call.Signals().Segments(), 0)); err != nil {
		call.Skip()
		return errors.Join(err, s.WaitEvent(st.done))
	}
	err = call.Enqueue(context.Background(), s)
	return errors.Join(err, s.WaitEvent(st.done))
}

// enqueueGemm has the GEMM stream wait for s, then enqueues the own GEMM
// and marks its end (done).
func (st *matmulState) enqueueGemm(s device.Stream, spec kernels.Gemm, order []int, sig rs2d.Signals) error {
	if err := st.ready.Record(s); err != nil {
		return err
	}
	if err := st.gemm.WaitEvent(st.ready); err != nil {
		return err
	}
	err := st.producer.Enqueue(st.gemm, spec, order, sig)
	if err == nil {
		st.calls++
	}
	return errors.Join(err, st.done.Record(st.gemm))
}

// gemmArgs are hc_gemm's operands (in and out as HC_* codes).
type gemmArgs struct {
	in, out, layout           int
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
	r, s, err := rankStream(h, stream)
	if err != nil {
		return err
	}
	spec := kernels.Gemm{M: int(x.m), N: int(x.n), K: int(x.k), A: device.Ptr(x.a), B: device.Ptr(x.b), C: device.Ptr(x.c),
		LDA: int(x.lda), LDB: int(x.ldb), LDC: int(x.ldc), DType: in, Out: out, Layout: layout,
		ScaleA: device.Ptr(x.scaleA), ScaleB: device.Ptr(x.scaleB), Workspace: device.Ptr(x.workspace)}
	if err := kernels.LaunchGemm(r.rank.Dev, s, spec); err != nil {
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
	return kernels.GemmWorkspaceBytes(r.rank.Dev.Info().SMs), nil
}
