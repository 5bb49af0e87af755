package kernels_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// The shared helpers (kerneltest), under the names these tests use.
var reduceShapes = []struct {
	blocks        int
	count, stride int64
}{
	{1, 1, 1},
	{1, 100, 100},
	{2, 37, 37},
	{3, 64, 80},
	{4, 1, 9},
	{8, 513, 600},
	{16, 1000, 1000},
	{32, 129, 131},
}

func TestReduceBlocksMatchesTheFP32Reference(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	for _, dt := range dtype.All {
		for _, sh := range reduceShapes {
			t.Run(fmt.Sprintf("%v/blocks%d/count%d/stride%d", dt, sh.blocks, sh.count, sh.stride), func(t *testing.T) {
				src := kerneltest.RandomElems(rng, dt, int64(sh.blocks-1)*sh.stride+sh.count)
				dst := make([]byte, sh.count*int64(dt.Size()))
				kernels.ReduceBlocks(dt, dst, src, sh.stride, sh.blocks, sh.count, -1, nil)
				kerneltest.RequireSameBits(t, dt, kerneltest.ReferenceReduce(dt, src, sh.stride, sh.blocks, sh.count, -1, nil), dst)

				if !dt.IsFloat() {
					return
				}
				// Loosely, against the fp64 sum: fp32 accumulation errs by at
				// most blocks*2^-24 of the magnitudes' sum, the final rounding
				// by the dtype's unit roundoff.
				for i := int64(0); i < sh.count; i++ {
					var sum, abs float64
					for k := int64(0); k < int64(sh.blocks); k++ {
						x := dt.Get(src, int(k*sh.stride+i))
						sum += x
						abs += math.Abs(x)
					}
					tol := (dt.UnitRoundoff()+float64(sh.blocks)*math.Ldexp(1, -24))*abs + math.Ldexp(1, -24)
					got := dt.Get(dst, int(i))
					require.InDelta(t, sum, got, tol, "element %d", i)
				}
			})
		}
	}
}

// TestReduceBlocksRoundingContract pins what the reference and the CUDA
// kernel promise: fp32 accumulation from 0 in block order, one rounding at
// the end, int32 wrapping.
func TestReduceBlocksRoundingContract(t *testing.T) {
	p := math.Ldexp
	cases := []struct {
		name string
		dt   dtype.DType
		in   []float64 // one element per block; int32 as its value
		want float64
	}{
		// Rounded once: 1 + 2^-8 + 2^-8 = 1 + 2^-7 exactly; rounding each
		// partial sum to bf16 would tie 1 + 2^-8 down to 1 and stay there.
		{"bf16 rounds once", dtype.BF16, []float64{1, p(1, -8), p(1, -8)}, 1 + p(1, -7)},
		{"fp16 rounds once", dtype.F16, []float64{1, p(1, -11), p(1, -11)}, 1 + p(1, -10)},
		// Accumulated in fp32: each small term is at most half an fp32 ulp
		// of 1 and vanishes, leaving a tie that rounds to even; summed in
		// fp64 (even if then rounded to fp32) they would tip it up.
		{"bf16 accumulates in fp32", dtype.BF16, []float64{1, p(1, -8), p(1, -25), p(1, -25), p(1, -25)}, 1},
		{"fp16 accumulates in fp32", dtype.F16, []float64{1, p(1, -11), p(1, -24), p(1, -24), p(1, -24)}, 1},
		{"fp32 accumulates in fp32", dtype.F32, []float64{1, p(1, -24), p(1, -24)}, 1},
		// In block order: the small terms first add up to something that counts.
		{"fp32 in block order", dtype.F32, []float64{p(1, -24), p(1, -24), 1}, 1 + p(1, -23)},
		{"fp16 overflows to inf", dtype.F16, []float64{60000, 60000}, math.Inf(1)},
		{"bf16 cancels exactly", dtype.BF16, []float64{3, -3, 0.5}, 0.5},
		{"int32 wraps at the top", dtype.I32, []float64{math.MaxInt32, 1}, math.MinInt32},
		{"int32 wraps at the bottom", dtype.I32, []float64{math.MinInt32, -1}, math.MaxInt32},
		{"int32 minus one twice", dtype.I32, []float64{-1, -1}, -2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := make([]byte, len(c.in)*c.dt.Size())
			for k, v := range c.in {
				if c.dt == dtype.I32 {
					binary.LittleEndian.PutUint32(src[4*k:], uint32(int32(v)))
					continue
				}
				c.dt.Put(src, k, v)
				require.Equal(t, v, c.dt.Get(src, k), "input %d is not exact in %v", k, c.dt)
			}
			dst := make([]byte, c.dt.Size())
			kernels.ReduceBlocks(c.dt, dst, src, 1, len(c.in), 1, -1, nil)
			require.Equal(t, c.want, c.dt.Get(dst, 0))
		})
	}
}

func TestReduceBlocksInt32IsBitExact(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	const blocks, count = 16, 4096
	src := kerneltest.RandomElems(rng, dtype.I32, blocks*count)
	dst := make([]byte, 4*count)
	kernels.ReduceBlocks(dtype.I32, dst, src, count, blocks, count, -1, nil)
	wrapped := 0
	for i := range count {
		var sum int64
		for k := range blocks {
			sum += int64(int32(binary.LittleEndian.Uint32(src[4*(k*count+i):])))
		}
		if sum != int64(int32(sum)) {
			wrapped++
		}
		require.Equal(t, uint32(sum), binary.LittleEndian.Uint32(dst[4*i:]), "element %d", i)
	}
	require.Positive(t, wrapped, "no sum wrapped: the test data does not exercise wrapping")
}

func TestReduceBlocksOneBlockCopies(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	for _, dt := range dtype.All {
		src := kerneltest.RandomElems(rng, dt, 1000)
		dst := kerneltest.RandomElems(rng, dt, 1000)
		kernels.ReduceBlocks(dt, dst, src, 0, 1, 1000, -1, nil)
		kerneltest.RequireSameBits(t, dt, src, dst)
	}
}

func TestReduceBlocksWritesOnlyCount(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	for _, dt := range dtype.All {
		src := kerneltest.RandomElems(rng, dt, 3*50)
		dst := kerneltest.RandomElems(rng, dt, 60)
		before := bytes.Clone(dst)
		kernels.ReduceBlocks(dt, dst, src, 50, 3, 45, -1, nil)
		es := dt.Size()
		kerneltest.RequireSameBits(t, dt, kerneltest.ReferenceReduce(dt, src, 50, 3, 45, -1, nil), dst[:45*es])
		require.Equal(t, before[45*es:], dst[45*es:], "%v: elements past count were written", dt)
	}
}

func TestReduceBlocksReadsTheOwnBlockFromSelfSrc(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	const blocks, count, stride = 5, 77, 80
	for _, dt := range dtype.All {
		for _, self := range []int{0, 2, blocks - 1, -1, blocks, 100} {
			t.Run(fmt.Sprintf("%v/self%d", dt, self), func(t *testing.T) {
				src := kerneltest.RandomElems(rng, dt, (blocks-1)*stride+count)
				own := kerneltest.RandomElems(rng, dt, count)
				es := int64(dt.Size())
				inRange := self >= 0 && self < blocks
				if inRange { // the own block's slot in src must not be read
					copy(src[int64(self)*stride*es:], kerneltest.PoisonElems(rng, dt, count))
				} else { // nor selfSrc when there is no own block
					own = kerneltest.PoisonElems(rng, dt, count)
				}
				dst := make([]byte, count*es)
				kernels.ReduceBlocks(dt, dst, src, stride, blocks, count, self, own)
				want := kerneltest.ReferenceReduce(dt, src, stride, blocks, count, self, own)
				kerneltest.RequireSameBits(t, dt, want, dst)
				for i := range int(count) {
					require.False(t, math.IsNaN(dt.Get(dst, i)), "element %d: poison was read", i)
				}
				if inRange { // the same as the blocks laid out in one buffer
					joined := bytes.Clone(src)
					copy(joined[int64(self)*stride*es:], own)
					kerneltest.RequireSameBits(t, dt, kerneltest.ReferenceReduce(dt, joined, stride, blocks, count, -1, nil), dst)
				}
			})
		}
	}
}

func TestReduceKernels(t *testing.T) {
	for _, dt := range dtype.All {
		k, err := kernels.Reduce(dt)
		require.NoError(t, err)
		require.Equal(t, "hc_reduce_"+dt.String(), k.Name)
		require.Equal(t, kernels.ReduceBlock, k.Block)
		require.Same(t, kernels.ReduceModule, k.Module)
		require.NotNil(t, k.Host)
		// The CUDA entry point exists and takes the arguments in the order
		// LaunchReduce passes them: dst, src, stride (int64), blocks (int32),
		// count (int64), self (int32), selfSrc.
		sig := fmt.Sprintf(`extern "C" __global__ void %s(`, k.Name)
		at := strings.Index(kernels.ReduceModule.Source, sig)
		require.GreaterOrEqual(t, at, 0, "%s is not in the CUDA source", k.Name)
		params := kernels.ReduceModule.Source[at+len(sig):]
		params = strings.Join(strings.Fields(params[:strings.Index(params, ")")]), " ")
		require.Regexp(t, `^\S+\* dst, const \S+\* src, long long stride, int nblocks, long long count, int self, const \S+\* self_src$`, params)
	}
	for _, dt := range []dtype.DType{dtype.Invalid, dtype.DType(9)} {
		_, err := kernels.Reduce(dt)
		require.ErrorIs(t, err, device.ErrNotSupported)
	}
	require.NotEmpty(t, kernels.ReduceModule.Name)
}

func TestLaunchReduceOnSimMatchesReduceBlocks(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	cases := []struct {
		blocks         int
		count, extra   int64 // stride = count + extra
		srcOff, dstOff int64 // in elements: unaligned for every dtype when odd
		self           int   // the block read from its own buffer; -1: none
		grids          []int
	}{
		{1, 1, 0, 0, 0, -1, []int{1, 4}},
		{1, 9, 0, 1, 1, 0, []int{1}},
		{2, 7, 0, 1, 3, -1, []int{1, 2, 8}},
		{3, 13, 5, 3, 1, 1, []int{1, 3}},
		{4, 1000, 0, 0, 0, 3, []int{1, 7}},
		{5, 4099, 3, 1, 5, -1, []int{1, 2, 3, 64}},
		{3, 33001, 1, 7, 9, 0, []int{1, 3, 1000}}, // several host workers
		{8, 12000, 24, 0, 0, -1, []int{5}},
	}
	d, s, ctx := kerneltest.SimDevice(t)
	for _, dt := range dtype.All {
		es := int64(dt.Size())
		for _, c := range cases {
			stride := c.count + c.extra
			srcElems := c.srcOff + int64(c.blocks-1)*stride + c.count // exactly what is read: an overrun faults
			src := kerneltest.RandomElems(rng, dt, srcElems)
			srcPtr := kerneltest.Upload(t, d, src)
			const ownOff = 3 // elements: the own block is unaligned too
			own := kerneltest.RandomElems(rng, dt, ownOff+c.count)
			ownPtr := kerneltest.Upload(t, d, own)
			want := make([]byte, c.count*es)
			kernels.ReduceBlocks(dt, want, src[c.srcOff*es:], stride, c.blocks, c.count, c.self, own[ownOff*es:])
			blocks := kernels.Blocks{Src: srcPtr.Add(c.srcOff * es), Stride: stride, N: c.blocks, Count: c.count, Self: c.self}
			if c.self >= 0 {
				blocks.SelfSrc = ownPtr.Add(ownOff * es)
			}
			for _, grid := range c.grids {
				name := fmt.Sprintf("%v/blocks%d/count%d/stride%d/src+%d/dst+%d/self%d/grid%d",
					dt, c.blocks, c.count, stride, c.srcOff, c.dstOff, c.self, grid)
				t.Run(name, func(t *testing.T) {
					guard := int64(11)
					dstInit := kerneltest.RandomElems(rng, dt, c.dstOff+c.count+guard)
					dstPtr := kerneltest.Upload(t, d, dstInit)
					require.NoError(t, kernels.LaunchReduce(d, s, dt, grid, dstPtr.Add(c.dstOff*es), blocks))
					require.NoError(t, s.Synchronize(ctx))
					got := kerneltest.Download(t, d, dstPtr, len(dstInit))
					kerneltest.RequireSameBits(t, dt, want, got[c.dstOff*es:(c.dstOff+c.count)*es])
					require.Equal(t, dstInit[:c.dstOff*es], got[:c.dstOff*es], "written before dst")
					require.Equal(t, dstInit[(c.dstOff+c.count)*es:], got[(c.dstOff+c.count)*es:], "written past count")
				})
			}
		}
	}
}

func TestLaunchReduceBoundsTheGrid(t *testing.T) {
	d, s, ctx := kerneltest.SimDevice(t)
	cases := []struct {
		dt       dtype.DType
		grid     int
		count    int64
		wantGrid int
	}{
		{dtype.F32, 64, 10, 1},          // less than one vector per thread of one block
		{dtype.F32, 64, 4 * 512 * 3, 3}, // exactly three blocks of 16-byte vectors
		{dtype.BF16, 32, 1 << 18, 32},   // enough work: the caller's bound holds
		{dtype.BF16, 300, 1 << 18, 64},  // 512 KiB / 16 / 512
		{dtype.I32, 0, 100, 1},
		{dtype.I32, -5, 100, 1},
	}
	for _, c := range cases {
		rec := &kerneltest.LaunchRecorder{Device: d}
		es := int64(c.dt.Size())
		dst := kerneltest.Upload(t, d, make([]byte, c.count*es))
		src := kerneltest.Upload(t, d, make([]byte, c.count*es))
		blocks := kernels.Blocks{Src: src, Stride: c.count, N: 1, Count: c.count, Self: -1}
		require.NoError(t, kernels.LaunchReduce(rec, s, c.dt, c.grid, dst, blocks))
		require.Equal(t, []int{c.wantGrid}, rec.Grids, "%v grid %d count %d", c.dt, c.grid, c.count)
	}
	require.NoError(t, s.Synchronize(ctx))

	// Nothing to do: nothing is launched, whatever the pointers.
	rec := &kerneltest.LaunchRecorder{Device: d}
	require.NoError(t, kernels.LaunchReduce(rec, s, dtype.F32, 8, 0, kernels.Blocks{N: 4, Self: -1}))
	require.Empty(t, rec.Grids)
	err := kernels.LaunchReduce(rec, s, dtype.Invalid, 8, 0, kernels.Blocks{N: 1, Count: 1, Self: -1})
	require.ErrorIs(t, err, device.ErrNotSupported)
	require.Empty(t, rec.Grids)
}

func TestLaunchReducePassesTheArguments(t *testing.T) {
	d, s, ctx := kerneltest.SimDevice(t)
	const count, n = 64, 3
	dst := kerneltest.Upload(t, d, make([]byte, 4*count))
	src := kerneltest.Upload(t, d, make([]byte, 4*count*n))
	own := kerneltest.Upload(t, d, make([]byte, 4*count))
	for _, c := range []struct {
		self     int
		wantSelf int32
	}{{0, 0}, {2, 2}, {-1, -1}, {-7, -1}, {n, -1}, {99, -1}} {
		rec := &kerneltest.LaunchRecorder{Device: d}
		blocks := kernels.Blocks{Src: src, Stride: count, N: n, Count: count, Self: c.self, SelfSrc: own}
		require.NoError(t, kernels.LaunchReduce(rec, s, dtype.I32, 4, dst, blocks))
		require.Equal(t, [][]any{{dst, src, int64(count), int32(n), int64(count), c.wantSelf, own}}, rec.Args, "self %d", c.self)
	}
	require.NoError(t, s.Synchronize(ctx))
}

func TestReduceKernelRejectsBadArguments(t *testing.T) {
	d, _, ctx := kerneltest.SimDevice(t)
	k, err := kernels.Reduce(dtype.F32)
	require.NoError(t, err)
	dstInit := make([]byte, 64)
	for i := range dstInit {
		dstInit[i] = byte(i + 1)
	}
	dst := kerneltest.Upload(t, d, dstInit)
	src := kerneltest.Upload(t, d, make([]byte, 4*64))
	own := kerneltest.Upload(t, d, make([]byte, 4*16))
	// Valid: dst, src, stride 16, 2 blocks, count 16, block 1 from own.
	args := func(edit func(a []any) []any) []any {
		return edit([]any{dst, src, int64(16), int32(2), int64(16), int32(1), own})
	}
	cases := []struct {
		name     string
		args     []any
		atLaunch bool // rejected by Launch itself (device.CheckArgs), not when it runs
		message  string
	}{
		{"six arguments", args(func(a []any) []any { return a[:6] }), false, "7 arguments"},
		{"eight arguments", args(func(a []any) []any { return append(a, int32(0)) }), false, "7 arguments"},
		{"no arguments", nil, false, "7 arguments"},
		{"int32 stride", args(func(a []any) []any { a[2] = int32(16); return a }), false, ""},
		{"int64 blocks", args(func(a []any) []any { a[3] = int64(2); return a }), false, ""},
		{"int32 count", args(func(a []any) []any { a[4] = int32(16); return a }), false, ""},
		{"int64 self", args(func(a []any) []any { a[5] = int64(1); return a }), false, ""},
		{"uint64 dst", args(func(a []any) []any { a[0] = uint64(dst); return a }), false, ""},
		{"uint64 own block", args(func(a []any) []any { a[6] = uint64(own); return a }), false, ""},
		{"zero blocks", args(func(a []any) []any { a[3] = int32(0); return a }), false, ""},
		{"negative count", args(func(a []any) []any { a[4] = int64(-1); return a }), false, ""},
		{"overlapping blocks", args(func(a []any) []any { a[2] = int64(8); return a }), false, ""},
		{"Go int", args(func(a []any) []any { a[2] = 16; return a }), true, ""},
		{"float64", args(func(a []any) []any { a[4] = 16.0; return a }), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := d.NewStream(device.Normal)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			err = d.Launch(s, k, 1, c.args...)
			if c.atLaunch {
				require.ErrorIs(t, err, device.ErrInvalidArgument)
			} else {
				require.NoError(t, err)
				err = s.Synchronize(ctx)
				require.ErrorIs(t, err, device.ErrInvalidArgument)
				require.ErrorContains(t, err, c.message)
				require.ErrorContains(t, err, k.Name)
			}
			require.Equal(t, dstInit, kerneltest.Download(t, d, dst, 64), "a rejected reduce wrote its output")
		})
	}
	s, err := d.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, d.Launch(s, k, 1, args(func(a []any) []any { return a })...))
	require.NoError(t, s.Synchronize(ctx), "the valid arguments the cases start from")
}

func TestReduceCatchesOutOfBounds(t *testing.T) {
	d, _, ctx := kerneltest.SimDevice(t)
	const count, n = 100, 3
	for _, dt := range dtype.All {
		es := int64(dt.Size())
		cases := []struct {
			name                         string
			srcElems, dstElems, ownElems int64
			self                         int
			message                      string
		}{
			{"source one element short", (n-1)*count + count - 1, count, 0, -1, "reduce input"},
			{"destination one element short", n * count, count - 1, 0, -1, "reduce output"},
			{"own block one element short", n * count, count, count - 1, 1, "reduce own block"},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", dt, c.name), func(t *testing.T) {
				s, err := d.NewStream(device.Normal)
				require.NoError(t, err)
				defer func() { require.NoError(t, s.Close()) }()
				dstInit := bytes.Repeat([]byte{0x5a}, int(c.dstElems*es))
				dst := kerneltest.Upload(t, d, dstInit)
				src := kerneltest.Upload(t, d, bytes.Repeat([]byte{0x11}, int(c.srcElems*es)))
				blocks := kernels.Blocks{Src: src, Stride: count, N: n, Count: count, Self: c.self}
				if c.ownElems > 0 {
					blocks.SelfSrc = kerneltest.Upload(t, d, bytes.Repeat([]byte{0x22}, int(c.ownElems*es)))
				}
				require.NoError(t, kernels.LaunchReduce(d, s, dt, 4, dst, blocks))
				err = s.Synchronize(ctx)
				require.ErrorIs(t, err, device.ErrInvalidArgument)
				require.ErrorContains(t, err, c.message)
				require.Equal(t, dstInit, kerneltest.Download(t, d, dst, len(dstInit)), "the faulting reduce wrote its output")
			})
		}
	}
}

// The own block's slot in src is never read, so src need not extend over it
// (the CUDA kernel does not touch it): the own block last, src ending before
// its slot, or first, src pointing a block before any memory (as the copy
// engine's pulls lay their landing slots out).
func TestReduceOwnBlockNeedsNoSlotInSrc(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	d, s, ctx := kerneltest.SimDevice(t)
	const count, stride, n = 40, 48, 3
	for _, dt := range dtype.All {
		for _, self := range []int{n - 1, 0} {
			es := int64(dt.Size())
			others := kerneltest.RandomElems(rng, dt, (n-2)*stride+count) // the other two blocks
			own := kerneltest.RandomElems(rng, dt, count)
			full := append(bytes.Clone(others), make([]byte, stride*es)...) // the own slot last
			if self == 0 {
				full = append(make([]byte, stride*es), others...) // the own slot first
			}
			want := make([]byte, count*es)
			kernels.ReduceBlocks(dt, want, full, stride, n, count, self, own)
			src := kerneltest.Upload(t, d, others)
			if self == 0 {
				src = src.Add(-stride * es)
			}
			dst := kerneltest.Upload(t, d, make([]byte, count*es))
			blocks := kernels.Blocks{Src: src, Stride: stride, N: n, Count: count, Self: self, SelfSrc: kerneltest.Upload(t, d, own)}
			require.NoError(t, kernels.LaunchReduce(d, s, dt, 1, dst, blocks))
			require.NoError(t, s.Synchronize(ctx), "%v, own block %d", dt, self)
			kerneltest.RequireSameBits(t, dt, want, kerneltest.Download(t, d, dst, int(count*es)))
		}
	}
}
