package gemm_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// sumCase is a GEMM whose rows [r0, r0+rows) are summed with the other
// block of two (Params.Sum), own block self, landing in segments of
// segRows rows.
type sumCase struct {
	in, out         dtype.DType
	layout          gemm.BLayout
	m, n, k         int
	r0, rows        int
	blocks, self    int
	segRows         int
	grid            int // 0: one CTA per SM; else a stream-K last wave on grid CTAs
	scaling         gemm.Scaling
	base            uint32
	landAfterLaunch bool // the blocks are copied in and their arrivals raised on a second stream
	// landLate, with landAfterLaunch, is how long the host waits after the
	// launch before the blocks land: with one CTA every own tile is then
	// queued, more than the storer's queue holds (a GPU's case).
	landLate time.Duration
}

func (c sumCase) String() string {
	late := ""
	if c.landLate > 0 {
		late = "/late"
	}
	return fmt.Sprintf("%v-%v/%v/%dx%dx%d/rows%d+%d/blocks%d-self%d/seg%d/grid%d/%v%s", c.in, c.out, c.layout, c.m, c.n, c.k,
		c.r0, c.rows, c.blocks, c.self, c.segRows, c.grid, c.scaling, late)
}

func sumCases() []sumCase {
	return []sumCase{
		{in: dtype.BF16, out: dtype.BF16, layout: gemm.BKN, m: 512, n: 264, k: 72, r0: 128, rows: 256, blocks: 2, self: 1, segRows: 100, base: 7, landAfterLaunch: true},
		{in: dtype.F16, out: dtype.F16, layout: gemm.BNK, m: 500, n: 512, k: 136, r0: 384, rows: 116, blocks: 2, self: 1, segRows: 64, base: 0xfffffffe},
		{in: dtype.BF16, out: dtype.BF16, layout: gemm.BNK, m: 384, n: 256, k: 64, r0: 0, rows: 128, blocks: 2, self: 0, segRows: 128, grid: 2, base: 0, landAfterLaunch: true},
		{in: dtype.E4M3, out: dtype.BF16, layout: gemm.BNK, m: 512, n: 256, k: 256, r0: 256, rows: 256, blocks: 2, self: 0, segRows: 32, scaling: gemm.RowWise, base: 3, landAfterLaunch: true},
		{in: dtype.E4M3, out: dtype.F16, layout: gemm.BNK, m: 256, n: 264, k: 384, r0: 128, rows: 128, blocks: 2, self: 1, segRows: 128, scaling: gemm.BlockWise, grid: 3, base: 9},
		{in: dtype.BF16, out: dtype.BF16, layout: gemm.BNK, m: 640, n: 264, k: 72, r0: 256, rows: 256, blocks: 4, self: 2, segRows: 96, base: 5, landAfterLaunch: true},
		{in: dtype.E4M3, out: dtype.BF16, layout: gemm.BNK, m: 384, n: 256, k: 256, r0: 128, rows: 256, blocks: 3, self: 0, segRows: 128, scaling: gemm.RowWise, base: 0xffffffff},
		{in: dtype.F16, out: dtype.F16, layout: gemm.BKN, m: 500, n: 512, k: 136, r0: 384, rows: 116, blocks: 4, self: 3, segRows: 64, grid: 2, base: 1, landAfterLaunch: true},
	}
}

// sumRun is a case's operands and outputs on one device.
type sumRun struct {
	sumCase
	a, b, sa, sb []byte
	data         []byte // the blocks: blocks × rows × n of out, block self poisoned (never read)
	c, d         []byte // C after the launch, Dst after it
	cPlain       []byte // C of the same product without the sum
}

// runSum runs c on dev: the product with the sum (C and Dst poisoned
// first), then without it into a second C, and reads all back.
func runSum(t *testing.T, dev device.Device, c sumCase) sumRun {
	t.Helper()
	ctx := context.Background()
	rng := kerneltest.NewRNG(t)
	r := sumRun{sumCase: c, a: check.Random(rng, c.in, c.m*c.k), b: check.Random(rng, c.in, c.k*c.n)}
	alloc := func(data []byte) device.Ptr {
		p, err := dev.Alloc(int64(len(data)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		require.NoError(t, dev.CopyToDevice(p, data))
		return p
	}
	streams := make([]device.Stream, 2)
	for i := range streams {
		s, err := dev.NewStream(device.Normal)
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		streams[i] = s
	}
	es := c.out.Size()
	r.data = check.Random(rng, c.out, c.blocks*c.rows*c.n)
	copy(r.data[c.self*c.rows*c.n*es:], check.Poison(c.out, c.rows*c.n))
	g := gemm.Params{GemmSpec: device.GemmSpec{M: c.m, N: c.n, K: c.k, DType: c.in, BT: c.layout == gemm.BNK,
		A: alloc(r.a), B: alloc(r.b), C: alloc(check.Poison(c.out, c.m*c.n))}, Out: c.out, Grid: c.grid}
	if c.in == dtype.E4M3 {
		g.Scaling = c.scaling
		na, nb := gemm.ScaleCounts(c.scaling, c.m, c.n, c.k)
		r.sa, r.sb = randomScales(rng, na, -4, 4), randomScales(rng, nb, -4, 4)
		g.ScaleA, g.ScaleB = alloc(r.sa), alloc(r.sb)
	}
	if c.grid > 0 {
		g.Workspace = alloc(make([]byte, gemm.WorkspaceBytes(c.grid)))
	}
	plain := g
	plain.C = alloc(check.Poison(c.out, c.m*c.n))
	src := alloc(check.Poison(c.out, c.blocks*c.rows*c.n))
	arrivals := make([]byte, 4*c.blocks)
	for k := range c.blocks { // the previous call's value
		putU32(arrivals[4*k:], c.base)
	}
	g.Sum = gemm.Sum{R0: c.r0, Rows: c.rows, Dst: alloc(check.Poison(c.out, c.rows*c.n)), Src: src,
		Stride: int64(c.rows * c.n), Blocks: c.blocks, Self: c.self, Arrivals: alloc(arrivals), Base: c.base, SegRows: c.segRows}
	// The blocks land segment by segment, each followed by its arrival, on
	// streams[1]: after the launch is enqueued (the kernel must wait for
	// them) or before.
	staged := alloc(r.data)
	land := func() {
		segs := (c.rows + c.segRows - 1) / c.segRows
		for j := range segs {
			r0, r1 := j*c.segRows, min((j+1)*c.segRows, c.rows)
			for k := range c.blocks {
				if k == c.self {
					continue
				}
				off := int64((k*c.rows+r0)*c.n) * int64(es)
				require.NoError(t, dev.Copy(streams[1], src.Add(off), staged.Add(off), int64((r1-r0)*c.n*es)))
				require.NoError(t, dev.WriteValue32(streams[1], g.Sum.Arrivals.Add(int64(4*k)), c.base+uint32(j)+1))
			}
		}
	}
	if !c.landAfterLaunch {
		land()
		require.NoError(t, streams[1].Synchronize(ctx))
	}
	require.NoError(t, gemm.Launch(dev, streams[0], g))
	if c.landAfterLaunch {
		time.Sleep(c.landLate)
		land()
	}
	require.NoError(t, gemm.Launch(dev, streams[0], plain))
	for _, s := range streams {
		require.NoError(t, s.Synchronize(ctx))
	}
	r.c, r.cPlain, r.d = make([]byte, c.m*c.n*es), make([]byte, c.m*c.n*es), make([]byte, c.rows*c.n*es)
	require.NoError(t, dev.CopyToHost(r.c, g.C))
	require.NoError(t, dev.CopyToHost(r.cPlain, plain.C))
	require.NoError(t, dev.CopyToHost(r.d, g.Sum.Dst))
	return r
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// check: C's rows outside the sum are the plain product's, bit for bit, and
// its summed rows untouched (poison); Dst is gemm.SumInTurn of the blocks
// with the plain product's own rows, bit for bit (with two blocks the
// reduce kernel's sum too), and within a rounding per other block of the
// fp64 sum of those blocks' values.
func (r sumRun) check(t *testing.T) {
	t.Helper()
	es, rowBytes := r.out.Size(), r.n*r.out.Size()
	poison := check.Poison(r.out, r.n)
	for i := 0; i < r.m; i++ {
		got, plain := r.c[i*rowBytes:(i+1)*rowBytes], r.cPlain[i*rowBytes:(i+1)*rowBytes]
		if i >= r.r0 && i < r.r0+r.rows {
			require.Equal(t, poison, got, "C's summed row %d was written", i)
			continue
		}
		require.Equal(t, plain, got, "C's row %d differs from the product without the sum", i)
	}
	own := r.cPlain[r.r0*rowBytes : (r.r0+r.rows)*rowBytes]
	want, views := make([]byte, r.rows*rowBytes), make([][]byte, r.blocks)
	for k := range views {
		views[k] = r.data[k*r.rows*rowBytes : (k+1)*r.rows*rowBytes]
	}
	views[r.self] = own
	gemm.SumInTurn(r.out, want, views, r.self, int64(r.rows*r.n))
	if r.blocks == 2 {
		reduced := make([]byte, len(want))
		kernels.ReduceBlocks(r.out, reduced, r.data, int64(r.rows*r.n), r.blocks, int64(r.rows*r.n), r.self, own)
		require.Equal(t, reduced, want, "two blocks summed in turn: not the reduce kernel's bits")
	}
	for i := 0; i < r.rows*r.n; i++ {
		exact, abs := 0.0, 0.0
		for k := 0; k < r.blocks; k++ {
			v := r.out.Get(r.data, k*r.rows*r.n+i)
			if k == r.self {
				v = r.out.Get(own, i)
			}
			exact += v
			abs += math.Abs(v)
		}
		got := r.out.Get(r.d, i)
		require.False(t, math.IsNaN(got), "Dst element %d (row %d) was never written", i, i/r.n)
		require.LessOrEqual(t, math.Abs(got-exact), float64(r.blocks-1)*r.out.UnitRoundoff()*abs+float64(r.blocks)*0x1p-24*abs+tinyOf(r.out),
			"Dst element %d (row %d) = %g, want %g", i, i/r.n, got, exact)
		require.Equal(t, want[i*es:(i+1)*es], r.d[i*es:(i+1)*es], "Dst element %d (row %d): not the bits of the blocks summed in turn", i, i/r.n)
	}
}

// The twin sums the rows it is given after their arrivals, every other row
// stored as without the sum, at tails (M, N not multiples of the tile, the
// summed rows reaching M), with stream-K, for 16-bit and fp8 inputs.
func TestGemmSumTwin(t *testing.T) {
	for _, c := range sumCases() {
		t.Run(c.String(), func(t *testing.T) {
			if c.grid > 0 {
				defer gemm.SetStreamKMin(gemm.SetStreamKMin(1))
			}
			runSum(t, simDev(t), c).check(t)
		})
	}
}

// A block whose arrival never comes: the twin waits for it and fails with a
// timeout naming the word (on a GPU the kernel would wait until the
// context's ReleaseWaits).
func TestGemmSumWaitsForArrivals(t *testing.T) {
	dev := sim.New(sim.NewHost("gemm-sum"), 0, sim.Options{WaitTimeout: 200 * time.Millisecond})
	defer func() { require.NoError(t, dev.Close()) }()
	s, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	alloc := func(n int) device.Ptr {
		p, err := dev.Alloc(int64(n))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		return p
	}
	m, n, k := 256, 256, 64
	g := gemm.Params{GemmSpec: device.GemmSpec{M: m, N: n, K: k, DType: dtype.BF16, A: alloc(2 * m * k), B: alloc(2 * k * n), C: alloc(2 * m * n)}}
	g.Sum = gemm.Sum{R0: 128, Rows: 128, Dst: alloc(2 * 128 * n), Src: alloc(2 * 2 * 128 * n), Stride: int64(128 * n),
		Blocks: 2, Self: 0, Arrivals: alloc(8), Base: 0, SegRows: 128}
	require.NoError(t, gemm.Launch(dev, s, g))
	err = s.Synchronize(context.Background())
	var te *device.TimeoutError
	require.True(t, errors.As(err, &te), "%v", err)
	require.Contains(t, err.Error(), "arrival of block 1")
}

// Params.Check refuses a sum it cannot do: rows not whole tiles, outside C,
// an own block out of range, blocks not whole rows apart, no arrivals; and
// a C that TMA cannot store (odd rows) or more blocks than a node has ranks
// are not supported.
func TestGemmSumCheck(t *testing.T) {
	base := gemm.Params{GemmSpec: device.GemmSpec{M: 512, N: 256, K: 64, DType: dtype.BF16, A: 256, B: 1 << 20, C: 2 << 20}}
	sum := gemm.Sum{R0: 128, Rows: 256, Dst: 3 << 20, Src: 4 << 20, Stride: 256 * 256, Blocks: 2, Self: 1, Arrivals: 5 << 20, SegRows: 64}
	ok := base
	ok.Sum = sum
	require.NoError(t, ok.Check())
	for _, tc := range []struct {
		name string
		edit func(*gemm.Params)
		want error
	}{
		{"row not a tile's", func(p *gemm.Params) { p.Sum.R0 = 64 }, device.ErrInvalidArgument},
		{"rows not whole tiles", func(p *gemm.Params) { p.Sum.Rows = 200 }, device.ErrInvalidArgument},
		{"past M", func(p *gemm.Params) { p.Sum.Rows = 512 }, device.ErrInvalidArgument},
		{"own block", func(p *gemm.Params) { p.Sum.Self = 2 }, device.ErrInvalidArgument},
		{"blocks not whole rows apart", func(p *gemm.Params) { p.Sum.Stride = 256*256 + 8 }, device.ErrInvalidArgument},
		{"more blocks than a node's ranks", func(p *gemm.Params) { p.Sum.Blocks = gemm.MaxSumBlocks + 1 }, device.ErrNotSupported},
		{"more row tiles than the storer's queue names", func(p *gemm.Params) { p.M = 1<<16*gemm.TileM + 1 }, device.ErrNotSupported},
		{"more column tiles than the storer's queue names", func(p *gemm.Params) {
			p.N, p.LDC = 1<<12*256+8, 1<<12*256+8
			p.Sum.Stride = 256 * int64(p.N)
		}, device.ErrNotSupported},
		{"no arrivals", func(p *gemm.Params) { p.Sum.Arrivals = 0 }, device.ErrInvalidArgument},
		{"no segments", func(p *gemm.Params) { p.Sum.SegRows = 0 }, device.ErrInvalidArgument},
		{"C stored from registers", func(p *gemm.Params) { p.N, p.LDC, p.Sum.Stride = 250, 250, 250*256 }, device.ErrNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			require.ErrorIs(t, p.Check(), tc.want)
		})
	}
}
