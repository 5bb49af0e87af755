package benchmarks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/world"
)

// MMShape is one local GEMM: C [M, N] = A [M, K] · B.
type MMShape struct{ M, N, K int }

func (s MMShape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// DefaultMMShapes are the local GEMMs of the overlap shapes: 8192×8192×28672,
// 8192³ and 4096×8192×28672 on 4 GPUs, the first two on 2 GPUs; on the CPU,
// small shapes with tails.
func DefaultMMShapes(gpu bool) []MMShape {
	if gpu {
		return []MMShape{{8192, 8192, 7168}, {8192, 8192, 2048}, {4096, 8192, 7168}, {8192, 8192, 14336}, {8192, 8192, 4096}}
	}
	return []MMShape{{200, 264, 72}, {129, 520, 64}}
}

// MMOptions configure the one-GPU GEMM benchmark.
type MMOptions struct {
	Shapes  []MMShape
	DType   dtype.DType
	Layouts []gemm.BLayout
	Rounds  int // rounds; each times Iters calls of every path, interleaved
	Iters   int // calls per timing (0: 20 on GPUs, 1 on the CPU)
	// Segments is how many signal segments the signalled variant raises
	// (row ranges of C, as a reduce-scatter over 4 ranks in 4 parts each
	// would wait on).
	Segments int
	Samples  int // output elements checked against the fp64 product
	Out      Printer
	Status   Printer
	Rows     *[]MMRow
}

// MMRow is one shape and layout: the rounds' times of each path.
type MMRow struct {
	Shape  MMShape
	Layout gemm.BLayout
	// Own and Signalled go stream-K in the last wave; Whole is the own
	// GEMM in whole tiles only.
	Own, Signalled, Whole, Matmul []time.Duration
	// MaxDiff is the largest |own − Matmul| over every element, in units
	// of the larger magnitude's dtype rounding; BoundUse the largest
	// sampled error against the fp64 product over its bound.
	MaxDiff, BoundUse float64
}

// medianOf is the median (the upper of the middle two), the least and the
// greatest of a path's measurements over the rounds (times, or ratios).
func medianOf[T cmp.Ordered](ds []T) (med, lo, hi T) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

// MM returns the job: on one rank, hiercoll's own GEMM against the device's
// Matmul (cuBLAS on GPUs) at each shape and layout of B, checked against
// each other on every element and against the fp64 product on samples,
// then timed in turn within each round.
func MM(o MMOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return mm(ctx, r, o) }
}

func mm(ctx context.Context, r world.Rank, o MMOptions) (err error) {
	gpu := r.Dev.Info().Backend == "cuda"
	if len(o.Shapes) == 0 {
		o.Shapes = DefaultMMShapes(gpu)
	}
	if len(o.Layouts) == 0 {
		o.Layouts = []gemm.BLayout{gemm.BKN, gemm.BNK}
	}
	o.Rounds = max(o.Rounds, 3)
	if o.Iters <= 0 {
		o.Iters = 1
		if gpu {
			o.Iters = 20
		}
	}
	if o.Samples <= 0 {
		o.Samples = 64
	}
	mmDev, err := device.MatmulOf(r.Dev)
	if err != nil {
		return err
	}
	if err := gemm.Prepare(r.Dev, o.DType); err != nil {
		return err
	}
	rg, err := newRig(r.Dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rg.close()) }()
	p := o.Out
	p.Printf("hiercoll bench-mm: one GPU (%s), %v: hiercoll's GEMM against %s, both in fp32 accumulation\n",
		r.Dev.Name(), o.DType, device.MatmulLibrary(mmDev))
	p.Printf("  per shape and layout of B: median over %s [min..max] of the mean of %s per path; within a round the paths' calls interleaved one by one, in random order, each timed alone\n", Count(o.Rounds, "round"), Count(o.Iters, "call"))
	p.Printf("%-18s %3s %24s %24s %24s %24s %8s %7s %7s %7s %s\n", "shape(MxNxK)", "B", "own us [min..max]", "own+signals us", "whole tiles us", "matmul us", "TFLOP/s", "own/mm", "signal", "whole", "check")
	var rows []MMRow
	for _, shape := range o.Shapes {
		for _, layout := range o.Layouts {
			row, err := mmShape(ctx, r, o, mmDev, rg, shape, layout)
			if err != nil {
				return fmt.Errorf("benchmarks: bench-mm %v %v: %w", shape, layout, err)
			}
			rows = append(rows, row)
			own, ol, oh := medianOf(row.Own)
			sig, sl, sh := medianOf(row.Signalled)
			whole, wl, wh := medianOf(row.Whole)
			ref, rl, rh := medianOf(row.Matmul)
			flop := 2 * float64(shape.M) * float64(shape.N) * float64(shape.K)
			p.Printf("%-18s %3s %24s %24s %24s %24s %8.1f %7.3f %7.3f %7.3f ok: %.2f of the fp64 bound, |own-mm| <= %.2f dtype roundings\n",
				shape, layout, spread(own, ol, oh), spread(sig, sl, sh), spread(whole, wl, wh), spread(ref, rl, rh), flop/own.Seconds()/1e12,
				ref.Seconds()/own.Seconds(), sig.Seconds()/own.Seconds(), whole.Seconds()/own.Seconds(), row.BoundUse, row.MaxDiff)
		}
	}
	p.Printf("  own/mm = matmul time / own time (above 1: own faster); signal = own+signals time / own time; whole = whole tiles time / own time (above 1: the stream-K last wave is faster)\n")
	if o.Rows != nil {
		*o.Rows = rows
	}
	return nil
}

func spread(med, lo, hi time.Duration) string {
	return fmt.Sprintf("%.1f [%.1f..%.1f]", us(med), us(lo), us(hi))
}

// mmBuffers are one shape's operands, the two outputs, and the signal
// tables of the signalled variant.
type mmBuffers struct {
	dev                                            device.Device
	a, b, cOwn, cRef, words, order, segs, ctrs, ws device.Ptr
}

func (m *mmBuffers) free() error {
	var errs []error
	for _, p := range []device.Ptr{m.a, m.b, m.cOwn, m.cRef, m.words, m.order, m.segs, m.ctrs, m.ws} {
		if p != 0 {
			errs = append(errs, m.dev.Free(p))
		}
	}
	return errors.Join(errs...)
}

func mmShape(ctx context.Context, r world.Rank, o MMOptions, mmDev device.Matmul, rg *rig, shape MMShape, layout gemm.BLayout) (row MMRow, err error) {
	dt, es := o.DType, int64(o.DType.Size())
	row = MMRow{Shape: shape, Layout: layout}
	o.Status.Printf("bench-mm: %v %v: setting up...\n", shape, layout)
	buf := &mmBuffers{dev: r.Dev}
	defer func() { err = errors.Join(err, buf.free()) }()
	in := &gemmInputs{seed: mix64(uint64(shape.M)<<40 ^ uint64(shape.N)<<20 ^ uint64(shape.K)), dt: dt, out: dt, world: 1, n: shape.N, kLocal: shape.K, rowsPer: shape.M}
	alloc := func(p *device.Ptr, n int64) {
		if err == nil {
			*p, err = r.Dev.Alloc(max(n, 256))
		}
	}
	alloc(&buf.a, int64(shape.M)*int64(shape.K)*es)
	alloc(&buf.b, int64(shape.K)*int64(shape.N)*es)
	alloc(&buf.cOwn, int64(shape.M)*int64(shape.N)*es)
	alloc(&buf.cRef, int64(shape.M)*int64(shape.N)*es)
	if err != nil {
		return row, err
	}
	if err := in.upload(r.Dev, buf.a, 0, 0, shape.M, shape.K); err != nil {
		return row, err
	}
	if err := in.uploadB(r.Dev, buf.b, 0, layout); err != nil {
		return row, err
	}
	if buf.ws, err = gemm.NewWorkspace(r.Dev); err != nil {
		return row, err
	}
	ref := device.GemmSpec{M: shape.M, N: shape.N, K: shape.K, A: buf.a, B: buf.b, C: buf.cRef, DType: dt, BT: layout == gemm.BNK}
	whole := gemm.Params{GemmSpec: ref}
	whole.C = buf.cOwn
	own := whole
	own.Workspace = buf.ws
	signalled, err := buf.signalTables(own, max(o.Segments, 1))
	if err != nil {
		return row, err
	}
	s := rg.s
	runOwn := func() error { return gemm.Launch(r.Dev, s, own) }
	runSig := func() error { signalled.Value++; return gemm.Launch(r.Dev, s, signalled) }
	runRef := func() error { return mmDev.Gemm(s, ref) }
	runWhole := func() error { return gemm.Launch(r.Dev, s, whole) }

	o.Status.Printf("bench-mm: %v %v: checking...\n", shape, layout)
	for _, run := range []func() error{runOwn, runWhole} {
		diff, use, err := mmCheck(ctx, r, o, in, buf, layout, s, run, runRef)
		if err != nil {
			return row, err
		}
		row.MaxDiff, row.BoundUse = max(row.MaxDiff, diff), max(row.BoundUse, use)
	}
	o.Status.Printf("bench-mm: %v %v: timing...\n", shape, layout)
	for _, run := range []func() error{runOwn, runSig, runWhole, runRef} { // warm-up
		if err := run(); err != nil {
			return row, err
		}
	}
	rng := rand.New(rand.NewPCG(uint64(shape.M), uint64(shape.N)<<32|uint64(shape.K)))
	for round := 0; round < o.Rounds; round++ {
		means, err := timeInterleaved(ctx, r.Dev, s, o.Iters, []func() error{runOwn, runSig, runWhole, runRef}, rng)
		if err != nil {
			return row, err
		}
		row.Own = append(row.Own, means[0])
		row.Signalled = append(row.Signalled, means[1])
		row.Whole = append(row.Whole, means[2])
		row.Matmul = append(row.Matmul, means[3])
	}
	return row, nil
}

// timeInterleaved runs iters calls of every path, one call of each per
// turn in a random order, each call timed by the events around it; it
// returns each path's mean. At the power cap the clock drifts within a
// round, and block-by-block timing gives the path that runs first the fast
// clock; call-by-call interleaving gives every path the same. The order is
// random, as a fixed rotation gives each path the same predecessor. Two
// paths that launch the same kernel still read up to about 1% apart
// (benchmarks/RESULTS.md): smaller differences are not resolved.
func timeInterleaved(ctx context.Context, dev device.Device, s device.Stream, iters int, paths []func() error, rng *rand.Rand) (means []time.Duration, err error) {
	n := len(paths)
	marks := make([]device.Event, n*iters+1)
	defer func() {
		for _, e := range marks {
			if e != nil {
				err = errors.Join(err, e.Close())
			}
		}
	}()
	for i := range marks {
		if marks[i], err = dev.NewTimedEvent(); err != nil {
			return nil, err
		}
	}
	if err := marks[0].Record(s); err != nil {
		return nil, err
	}
	who := make([]int, 0, n*iters) // the path of each call
	for t := 0; t < iters; t++ {
		for _, p := range rng.Perm(n) {
			if err := paths[p](); err != nil {
				return nil, err
			}
			who = append(who, p)
			if err := marks[len(who)].Record(s); err != nil {
				return nil, err
			}
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		return nil, err
	}
	sums := make([]time.Duration, n)
	for k, p := range who {
		d, err := marks[k+1].Since(marks[k])
		if err != nil {
			return nil, err
		}
		sums[p] += d
	}
	for p := range sums {
		means = append(means, sums[p]/time.Duration(iters))
	}
	return means, nil
}

// signalTables makes the signalled variant of g: its rows in segs
// segments per each of 4 destinations, each raising a word of its own.
func (m *mmBuffers) signalTables(g gemm.Params, segs int) (gemm.Params, error) {
	const dests = 4
	var list []gemm.Segment
	n := dests * segs
	var err error
	if m.words, err = m.dev.Alloc(int64(4 * n)); err != nil {
		return g, err
	}
	rows := (g.M + n - 1) / n
	for i := 0; i < n; i++ {
		r0 := min(i*rows, g.M)
		list = append(list, gemm.Segment{R0: r0, R1: min(r0+rows, g.M), Signal: m.words.Add(int64(4 * i))})
	}
	order, records := gemm.Tables(g.M, g.N, list)
	upload := func(p *device.Ptr, data []byte) {
		if err == nil {
			if *p, err = m.dev.Alloc(int64(len(data))); err == nil {
				err = m.dev.CopyToDevice(*p, data)
			}
		}
	}
	upload(&m.order, order)
	upload(&m.segs, records)
	upload(&m.ctrs, make([]byte, 4*n))
	if err == nil {
		err = m.dev.CopyToDevice(m.words, make([]byte, 4*n))
	}
	g.Order, g.Segments, g.Counters, g.NSegs = m.order, m.segs, m.ctrs, n
	return g, err
}

// uploadB writes rank q's B, [K, N] or [N, K] as layout says, element
// (k, j) being value(q, 1, k·N + j).
func (in *gemmInputs) uploadB(dev device.Device, p device.Ptr, q int, layout gemm.BLayout) error {
	if layout == gemm.BKN {
		return in.upload(dev, p, q, 1, in.kLocal, in.n)
	}
	es := in.dt.Size()
	host := make([]byte, in.kLocal*in.n*es)
	for j := 0; j < in.n; j++ {
		for k := 0; k < in.kLocal; k++ {
			in.dt.Put(host, j*in.kLocal+k, in.raw(q, 1, int64(k)*int64(in.n)+int64(j)))
		}
	}
	return dev.CopyToDevice(p, host)
}

// mmCheck runs both GEMMs once on poisoned outputs and compares them: every
// element within four dtype roundings of each other (both round an fp32 sum
// of the same products once; near zero, roundings of C's rms), and sampled
// elements within the fp64 bound.
// It returns the largest difference in roundings and the largest fraction
// of the bound used.
func mmCheck(ctx context.Context, r world.Rank, o MMOptions, in *gemmInputs, buf *mmBuffers, layout gemm.BLayout,
	s device.Stream, runOwn, runRef func() error) (maxDiff, boundUse float64, err error) {
	dt, count := o.DType, in.rowsPer*in.n
	for _, c := range []device.Ptr{buf.cOwn, buf.cRef} {
		if err := r.Dev.Memset32(s, c, check.PoisonWord(dt), int64(count*dt.Size()+3)/4); err != nil {
			return 0, 0, err
		}
	}
	if err := errors.Join(runOwn(), runRef()); err != nil {
		return 0, 0, err
	}
	if err := s.Synchronize(ctx); err != nil {
		return 0, 0, err
	}
	got, ref := make([]byte, count*dt.Size()), make([]byte, count*dt.Size())
	if err := errors.Join(r.Dev.CopyToHost(got, buf.cOwn), r.Dev.CopyToHost(ref, buf.cRef)); err != nil {
		return 0, 0, err
	}
	// Differences count in roundings of the larger value, or of C's rms
	// for values near zero (where the two sums' orders differ most).
	rms := 0.0
	for e := 0; e < count; e++ {
		rms += dt.Get(ref, e) * dt.Get(ref, e)
	}
	rms = math.Sqrt(rms / float64(count))
	var bad []string
	for e := 0; e < count; e++ {
		a, b := dt.Get(got, e), dt.Get(ref, e)
		d := math.Abs(a-b) / (dt.UnitRoundoff() * max(math.Abs(a), math.Abs(b), rms, 1e-30))
		if math.IsNaN(a) || d > 4 {
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("C[%d, %d] = %g, the matmul's %g", e/in.n, e%in.n, a, b))
			}
			continue
		}
		maxDiff = max(maxDiff, d)
	}
	if len(bad) > 0 {
		return maxDiff, 0, fmt.Errorf("own GEMM against the matmul: %s", strings.Join(bad, "; "))
	}
	step := max(1, count/o.Samples)
	for e := 0; e < count; e += step {
		i, j := e/in.n, e%in.n
		exact, abs := in.expected(0, i, j)
		tol := (dt.UnitRoundoff()+float64(in.kLocal)/(1<<24)*2)*abs + 1.0/(1<<24)
		v := dt.Get(got, e)
		if math.Abs(v-exact) > tol {
			return maxDiff, boundUse, fmt.Errorf("own GEMM: C[%d, %d] = %g, the fp64 product is %g (bound %.3g)", i, j, v, exact, tol)
		}
		boundUse = max(boundUse, math.Abs(v-exact)/tol)
	}
	return maxDiff, boundUse, nil
}
