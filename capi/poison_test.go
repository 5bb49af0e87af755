package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// onesCall is a matmul + reduce-scatter whose operands are all ones (bf16,
// B [K, N]): every element of out must be world × k.
type onesCall struct {
	h, ctx               int64
	s                    uint64
	a, b, c, out         uint64
	world, rowsPer, n, k int
}

// eachOnesCall runs test on every rank of a simulated node of world GPUs,
// each with an overlap context for calls of rowsPer rows per rank and a
// onesCall on it.
func eachOnesCall(t *testing.T, world, rowsPer, n, k int, test func(x onesCall) error) {
	eachRank(t, simRanks(t, 1, world), func(_ int, h int64) error {
		ctx, err := createRS2D(h, int64(rowsPer*world), int64(n), 1, overlapWithGEMM, 0)
		if err != nil {
			return err
		}
		defer func() { require.NoError(t, destroyRS2D(ctx)) }()
		x, err := newOnesCall(h, ctx, world, rowsPer, n, k)
		if err != nil {
			return err
		}
		return test(x)
	})
}

func newOnesCall(h, ctx int64, world, rowsPer, n, k int) (onesCall, error) {
	x := onesCall{h: h, ctx: ctx, world: world, rowsPer: rowsPer, n: n, k: k}
	m := rowsPer * world
	var err error
	if x.s, err = createStream(h); err != nil {
		return x, err
	}
	ones := func(elems int) uint64 {
		data := make([]byte, 2*elems)
		for i := 0; i < elems; i++ {
			dtype.BF16.Put(data, i, 1)
		}
		p, e := allocMem(h, int64(len(data)))
		if e == nil {
			e = copyToDevice(h, p, data)
		}
		err = errors.Join(err, e)
		return p
	}
	x.a, x.b, x.c, x.out = ones(m*k), ones(k*n), ones(m*n), ones(rowsPer*n)
	return x, err
}

func (x onesCall) args() matmulArgs {
	return matmulArgs{a: x.a, b: x.b, c: x.c, out: x.out, m: int64(x.rowsPer * x.world), k: int64(x.k), layout: layoutKN}
}

// run makes the call with args and checks its output.
func (x onesCall) run(args matmulArgs) error {
	if err := copyToDevice(x.h, x.out, make([]byte, 2*x.rowsPer*x.n)); err != nil {
		return err
	}
	if err := matmulReduceScatter(x.ctx, args, x.s); err != nil {
		return err
	}
	if err := synchronizeStream(x.h, x.s, 60_000); err != nil {
		return err
	}
	got := make([]byte, 2*x.rowsPer*x.n)
	if err := copyToHost(x.h, got, x.out); err != nil {
		return err
	}
	for i := 0; i < x.rowsPer*x.n; i++ {
		if v, want := dtype.BF16.Get(got, i), float64(x.world*x.k); v != want {
			return fmt.Errorf("out[%d] = %g, want %g", i, v, want)
		}
	}
	return nil
}

// A matmul + reduce-scatter whose operands are too small for m·k and k·n,
// or whose scales are not device memory, is refused before anything is
// enqueued, on every rank alike; the valid call after each on the same
// context then runs and is right.
func TestMatmulReduceScatterBadOperandsLeaveContextUsable(t *testing.T) {
	const world, rowsPer, n, k = 2, 8, 16, 16
	eachOnesCall(t, world, rowsPer, n, k, func(x onesCall) error {
		h := x.h
		short, err := allocMem(h, 64) // device memory, far too small for any operand
		if err != nil {
			return err
		}
		for name, bad := range map[string]func(a *matmulArgs){
			"a smaller than m·k":          func(a *matmulArgs) { a.a = short },
			"b smaller than k·n":          func(a *matmulArgs) { a.b = short },
			"a past the end of its alloc": func(a *matmulArgs) { a.a += 2 * n },
			"lda beyond a's allocation":   func(a *matmulArgs) { a.lda = 2 * k },
			"e4m3 scale not device memory": func(a *matmulArgs) {
				a.in, a.layout, a.scaleA, a.scaleB = dtype.E4M3, layoutNK, 0x1000, 0x1000
			},
		} {
			args := x.args()
			bad(&args)
			if err := x.run(args); !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
			}
			if err := x.run(x.args()); err != nil {
				return fmt.Errorf("the valid call after %s: %w", name, err)
			}
		}
		return nil
	})
}

// hc_gemm refuses operands too small for m, n and k, and a workspace that
// is not device memory even where this launch would not use it.
func TestGemmABIBadOperands(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]
	s, err := createStream(h)
	require.NoError(t, err)
	const m, n, k = 16, 16, 32
	buf, err := allocMem(h, 1<<16)
	require.NoError(t, err)
	short, err := allocMem(h, 256)
	require.NoError(t, err)
	ok := gemmArgs{in: 1, out: 1, layout: layoutKN, a: buf, b: buf + 4096, c: buf + 8192, m: m, n: n, k: k}
	require.NoError(t, gemm(h, ok, s))
	for name, x := range map[string]gemmArgs{
		"a too small":         func() gemmArgs { x := ok; x.a = short; return x }(),
		"b too small":         func() gemmArgs { x := ok; x.b = short; return x }(),
		"c too small":         func() gemmArgs { x := ok; x.c = short; return x }(),
		"c past the end":      func() gemmArgs { x := ok; x.c = buf + 1<<16 - 64; return x }(),
		"bogus workspace":     func() gemmArgs { x := ok; x.workspace = 0xdead0000; return x }(),
		"workspace too small": func() gemmArgs { x := ok; x.workspace = short; return x }(),
	} {
		require.ErrorIs(t, gemm(h, x, s), device.ErrInvalidArgument, name)
	}
	require.NoError(t, synchronizeStream(h, s, 10_000), "nothing bad was enqueued")
	require.NoError(t, gemm(h, ok, s))
	require.NoError(t, synchronizeStream(h, s, 10_000))
}

// A GEMM that fails on the context's GEMM stream after its operands were
// checked (here A is freed while the call waits behind earlier work on the
// caller's stream) is the next call's error, naming the failed call; the
// call after that runs and is right: the failure does not stay in the
// context.
func TestMatmulReduceScatterGemmStreamFailureRecovers(t *testing.T) {
	holdPath(t, true) // the GEMM stream is the overlapped path's
	const world, rowsPer, n, k = 1, 8, 16, 16
	hs := simRanks(t, 1, world)
	h := hs[0]
	ctx, err := createRS2D(h, rowsPer*world, n, 1, overlapWithGEMM, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, destroyRS2D(ctx)) }()
	x, err := newOnesCall(h, ctx, world, rowsPer, n, k)
	require.NoError(t, err)
	require.NoError(t, x.run(x.args()))

	// Hold the caller's stream on a word, enqueue a call, free its A, then
	// let the stream go: the GEMM reads freed memory and fails.
	r, err := lookup[*rankObj](h, kindWorld)
	require.NoError(t, err)
	table.mu.Lock()
	s, err := r.streamLocked(x.s)
	table.mu.Unlock()
	require.NoError(t, err)
	gate, err := allocMem(h, 4)
	require.NoError(t, err)
	require.NoError(t, copyToDevice(h, gate, make([]byte, 4)))
	require.NoError(t, r.rank.Dev.WaitValue32(s, device.Word{Addr: device.Ptr(gate), Label: "test gate"}, device.GEQ, 1))
	doomed := x
	doomed.a, err = allocMem(h, int64(2*rowsPer*world*k))
	require.NoError(t, err)
	require.NoError(t, matmulReduceScatter(ctx, doomed.args(), x.s))
	require.NoError(t, freeMem(h, doomed.a))
	// Released by a write on another stream, as the device writes words
	// (atomically: the held stream polls it).
	opener, err := createStream(h)
	require.NoError(t, err)
	table.mu.Lock()
	open, err := r.streamLocked(opener)
	table.mu.Unlock()
	require.NoError(t, err)
	require.NoError(t, r.rank.Dev.WriteValue32(open, device.Ptr(gate), 1))
	// The failure reaches the caller's stream through the GEMM stream's
	// event, not as a wait for GEMM signals that times out.
	err = synchronizeStream(h, x.s, 60_000)
	require.ErrorContains(t, err, "kernel hc_gemm_bf16_kn")
	require.NotErrorIs(t, err, device.ErrTimeout)

	fresh, err := createStream(h)
	require.NoError(t, err)
	x.s = fresh
	err = x.run(x.args())
	require.Error(t, err)
	require.Contains(t, err.Error(), "call 2 on this context failed")
	require.NoError(t, x.run(x.args()), "the call after the one that reported the failure")
	require.NoError(t, x.run(x.args()))
}
