package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
)

func TestMain(m *testing.M) {
	code := sim.RunTests(m)
	if code == 0 {
		table.mu.Lock()
		n := len(table.objects)
		table.mu.Unlock()
		if n != 0 {
			fmt.Fprintf(os.Stderr, "leak: %d handle(s) still in the table after all tests\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, codeOK},
		{fmt.Errorf("x: %w", device.ErrInvalidArgument), codeInvalid},
		{fmt.Errorf("x: %w", device.ErrNotSupported), codeNotSupported},
		{&device.TimeoutError{What: "stream synchronize"}, codeTimeout},
		{fmt.Errorf("x: %w", device.ErrPeer), codePeer},
		{fmt.Errorf("x: %w", device.ErrClosed), codeClosed},
		{errors.New("cuda: CUDA_ERROR_LAUNCH_FAILED"), codeOther},
		{errors.Join(fmt.Errorf("a: %w", device.ErrPeer), &device.TimeoutError{}), codeTimeout},
	} {
		require.Equal(t, tc.code, codeOf(tc.err), "%v", tc.err)
	}
}

// simRanks makes a simulated world through the Go side of the ABI and
// closes it at the end of the test.
func simRanks(t *testing.T, nodes, gpus int) []int64 {
	t.Helper()
	hs, err := initSim(nodes, gpus)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, h := range hs {
			require.NoError(t, closeWorld(h))
		}
	})
	return hs
}

// eachRank runs fn concurrently for every rank handle.
func eachRank(t *testing.T, hs []int64, fn func(i int, h int64) error) {
	t.Helper()
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() { errs[i] = fn(i, h) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// int32Calls makes checked int32 calls on one rank: rank r's input of a
// call is input(r, call, i), and the output must be the exact sum.
type int32Calls struct {
	h, ctx                  int64
	s, in, out              uint64
	world, rowsPer, n, rank int
	input                   func(rank, call, i int) int32
}

// newInt32Calls makes the stream and the buffers of rank's calls on ctx
// (closeWorld releases them).
func newInt32Calls(h, ctx int64, world, rowsPer, n, rank int, input func(rank, call, i int) int32) (int32Calls, error) {
	c := int32Calls{h: h, ctx: ctx, world: world, rowsPer: rowsPer, n: n, rank: rank, input: input}
	var err error
	if c.s, err = createStream(h); err != nil {
		return c, err
	}
	if c.in, err = allocMem(h, int64(world*rowsPer*n*4)); err != nil {
		return c, err
	}
	c.out, err = allocMem(h, int64(rowsPer*n*4))
	return c, err
}

// check uploads the call's input, runs raise (the producer's signals; nil:
// none), enqueues the call, waits for it and compares the output.
func (c int32Calls) check(call int, raise func() error) error {
	m := c.world * c.rowsPer
	buf := make([]byte, m*c.n*4)
	for i := range m * c.n {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(c.input(c.rank, call, i)))
	}
	if err := copyToDevice(c.h, c.in, buf); err != nil {
		return err
	}
	if raise != nil {
		if err := raise(); err != nil {
			return err
		}
	}
	if err := reduceScatter(c.ctx, c.in, int64(m), c.out, c.s); err != nil {
		return err
	}
	if err := synchronizeStream(c.h, c.s, 10_000); err != nil {
		return err
	}
	got := make([]byte, c.rowsPer*c.n*4)
	if err := copyToHost(c.h, got, c.out); err != nil {
		return err
	}
	for j := range c.rowsPer * c.n {
		var want int32
		for r := range c.world {
			want += c.input(r, call, c.rank*c.rowsPer*c.n+j)
		}
		if g := int32(binary.LittleEndian.Uint32(got[4*j:])); g != want {
			return fmt.Errorf("rank %d call %d element %d: got %d, want %d", c.rank, call, j, g, want)
		}
	}
	return nil
}

func TestReduceScatterInt32(t *testing.T) {
	hs := simRanks(t, 2, 2)
	const world, rowsPer, n = 4, 3, 5
	const m = world * rowsPer
	input := func(rank, call, i int) int32 { return int32((rank+1)*1000 + call*100 + i - 30) }
	eachRank(t, hs, func(rank int, h int64) error {
		info, err := rankInfo(h)
		if err != nil {
			return err
		}
		if info.Rank != rank || info.Size != world || info.LocalRank != rank%2 || info.LocalSize != 2 || info.Backend != backendSim {
			return fmt.Errorf("rank %d: info %+v", rank, info)
		}
		ctx, err := createRS2D(h, m, n, 4, 0, 0)
		if err != nil {
			return err
		}
		defer func() { require.NoError(t, destroyRS2D(ctx)) }()
		c, err := newInt32Calls(h, ctx, world, rowsPer, n, rank, input)
		if err != nil {
			return err
		}
		for call := range 3 {
			if err := c.check(call, nil); err != nil {
				return err
			}
		}
		// Bad input: every rank makes the same bad call, so nobody waits.
		err = reduceScatter(ctx, c.in, m-1, c.out, c.s)
		if codeOf(err) != codeInvalid {
			return fmt.Errorf("M=%d: got %v, want an invalid-argument error", m-1, err)
		}
		if err := freeMem(h, c.in); err != nil {
			return err
		}
		// out and the stream are left for closeWorld to release.
		return nil
	})
}

func TestHandles(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]

	_, err := lookup[*rs2dObj](h, kindRS2D)
	require.Equal(t, codeInvalid, codeOf(err), "a world handle used as a context")
	_, err = rankInfo(987654321)
	require.Equal(t, codeInvalid, codeOf(err))
	require.ErrorContains(t, err, "987654321 is not the handle of a live world")

	_, err = createRS2D(h, 8, 8, 9, 0, 0)
	require.ErrorContains(t, err, "dtype 9")
	_, err = createRS2D(h, 0, 8, 1, 0, 0)
	require.Equal(t, codeInvalid, codeOf(err))

	ctx, err := createRS2D(h, 8, 8, 1, overlapWithGEMM, 2)
	require.NoError(t, err)
	require.Equal(t, codeInvalid, codeOf(closeWorld(h)), "closing a world with a live context")

	v, err := signalValue(ctx)
	require.NoError(t, err)
	require.Equal(t, uint32(1), v)
	a, err := signalAddr(ctx, 0)
	require.NoError(t, err)
	require.NotZero(t, a)
	_, err = signalAddr(ctx, 1)
	require.Equal(t, codeInvalid, codeOf(err))
	order := make([]int32, 1)
	require.NoError(t, consumptionOrder(ctx, order))
	require.Equal(t, []int32{0}, order)
	require.Equal(t, codeInvalid, codeOf(consumptionOrder(ctx, nil)))

	// Stream 0 is the rank's default stream on the simulated backend; other
	// handles must come from createStream.
	require.NoError(t, raiseSignal(ctx, 0, 0))
	require.NoError(t, synchronizeStream(h, 0, 0))
	require.Equal(t, codeInvalid, codeOf(synchronizeStream(h, 77, 0)))
	require.Equal(t, codeInvalid, codeOf(destroyStream(h, 77)))
	require.Equal(t, codeInvalid, codeOf(freeMem(h, 0x1234)))

	require.NoError(t, destroyRS2D(ctx))
	require.Equal(t, codeInvalid, codeOf(destroyRS2D(ctx)), "destroyed twice")
	require.Equal(t, codeInvalid, codeOf(reduceScatter(ctx, 1, 1, 2, 0)))
}

// TestHotPathAllocs checks that the lookup of the hot path allocates
// nothing once the stream is cached.
func TestHotPathAllocs(t *testing.T) {
	hs := simRanks(t, 1, 1)
	ctx, err := createRS2D(hs[0], 8, 8, 1, 0, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, destroyRS2D(ctx)) }()
	_, _, err = contextAndStream(ctx, 0)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := contextAndStream(ctx, 0); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestInitSimBounds(t *testing.T) {
	for _, shape := range [][2]int{{0, 1}, {1, 0}, {-1, 2}, {17, 16}} {
		_, err := initSim(shape[0], shape[1])
		require.Equal(t, codeInvalid, codeOf(err), "%v", shape)
	}
}

func TestLastErrorBound(t *testing.T) {
	lastErrors.mu.Lock()
	saved := lastErrors.thread
	lastErrors.thread = map[int]threadError{}
	for i := range maxThreadErrors {
		lastErrors.seq++
		lastErrors.thread[-1-i] = threadError{msg: "old", seq: lastErrors.seq}
	}
	lastErrors.mu.Unlock()
	defer func() {
		lastErrors.mu.Lock()
		lastErrors.thread = saved
		lastErrors.mu.Unlock()
	}()

	runtime.LockOSThread() // the record is per OS thread
	defer runtime.UnlockOSThread()
	setLastError("mine") // the calling thread is new: the oldest entry goes
	require.Equal(t, "mine", lastError())
	lastErrors.mu.Lock()
	defer lastErrors.mu.Unlock()
	require.Len(t, lastErrors.thread, maxThreadErrors)
	_, ok := lastErrors.thread[-1]
	require.False(t, ok, "the oldest message is dropped")
}

// A rejected call and hc_rs2d_skip_call pass over the next call's signal
// value on a GEMM-overlap context, and leave a plain context alone.
func TestSkipCall(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]
	for _, overlap := range []bool{true, false} {
		flags := 0
		if overlap {
			flags = overlapWithGEMM
		}
		ctx, err := createRS2D(h, 4, 4, 4, flags, 0)
		require.NoError(t, err)
		step := uint32(0)
		if overlap {
			step = 2
		}
		v, err := signalValue(ctx)
		require.NoError(t, err)
		require.Equal(t, uint32(1), v)
		require.NoError(t, skipCall(ctx))
		v, err = signalValue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1+step, v, "overlap %v: after skip_call", overlap)
		in, err := allocMem(h, 64)
		require.NoError(t, err)
		out, err := allocMem(h, 64)
		require.NoError(t, err)
		require.Equal(t, codeInvalid, codeOf(reduceScatter(ctx, in, 5, out, 0)), "M above max_m")
		v, err = signalValue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1+2*step, v, "overlap %v: after a rejected call", overlap)
		require.NoError(t, freeMem(h, in))
		require.NoError(t, freeMem(h, out))
		require.NoError(t, destroyRS2D(ctx))
		require.Equal(t, codeOf(skipCall(ctx)), codeOf(badHandle(ctx, kindRS2D)), "skip_call on a destroyed context")
	}
}

// HC_SPLIT_FIRST_BLOCK: the early rows of a call, the early signal raised
// through the C ABI, and a 1 x 4 world whose first blocks go in two parts
// (int32, bit for bit); flags outside the four defined are refused.
func TestSplitFirstBlock(t *testing.T) {
	hs := simRanks(t, 1, 4)
	const world, rowsPer, n = 4, 4, 3
	const m = world * rowsPer
	input := func(rank, call, i int) int32 { return int32(rank*7919 + call*131 + i*3 - 500) }
	eachRank(t, hs, func(rank int, h int64) error {
		for _, bad := range []int{splitFirstBlock, 32, overlapWithGEMM | 16} {
			if _, err := createRS2D(h, m, n, 4, bad, 0); codeOf(err) != codeInvalid {
				return fmt.Errorf("overlap flags %#x: %v, want an invalid-argument error", bad, err)
			}
		}
		ctx, err := createRS2D(h, m, n, 4, overlapWithGEMM|splitFirstBlock, 0)
		if err != nil {
			return err
		}
		defer func() { require.NoError(t, destroyRS2D(ctx)) }()
		rows, err := earlyRows(ctx, m)
		if err != nil {
			return err
		}
		if rows != rowsPer/2 {
			return fmt.Errorf("early rows of M=%d: %d, want %d", m, rows, rowsPer/2)
		}
		if _, err := earlyRows(ctx, 0); codeOf(err) != codeInvalid {
			return fmt.Errorf("early rows of M=0: %v, want an invalid-argument error", err)
		}
		if a, err := earlySignalAddr(ctx, 0); err != nil || a == 0 {
			return fmt.Errorf("early signal address: %#x, %v", a, err)
		}
		order := make([]int32, world)
		if err := consumptionOrder(ctx, order); err != nil {
			return err
		}
		c, err := newInt32Calls(h, ctx, world, rowsPer, n, rank, input)
		if err != nil {
			return err
		}
		// The producer's signals: the early one, then every block's.
		raise := func() error {
			if err := raiseEarly(ctx, int(order[0]), c.s); err != nil {
				return err
			}
			for _, d := range order {
				if err := raiseSignal(ctx, int(d), c.s); err != nil {
					return err
				}
			}
			return nil
		}
		for call := range 2 {
			if err := c.check(call, raise); err != nil {
				return err
			}
		}
		return freeMem(h, c.in) // out and the stream are left for closeWorld
	})
}
