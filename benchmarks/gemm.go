package benchmarks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// GemmShape is one GEMM + reduce-scatter problem: C = A·B with A [M, K] and
// B [K, N] as a whole, K split evenly over the ranks (each rank holds
// A [M, K/world] and B [K/world, N]).
type GemmShape struct{ M, N, K int }

func (s GemmShape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// ParseGemmShapes reads "8192x8192x28672,4096x8192x28672" (M×N×K).
func ParseGemmShapes(s string) ([]GemmShape, error) {
	var out []GemmShape
	for _, f := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(strings.ToLower(f)), "x")
		if len(parts) != 3 {
			return nil, fmt.Errorf("shape %q: want MxNxK", f)
		}
		var v [3]int
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("shape %q: want three positive integers MxNxK", f)
			}
			v[i] = n
		}
		out = append(out, GemmShape{M: v[0], N: v[1], K: v[2]})
	}
	return out, nil
}

// DefaultGemmShapes are the row-parallel linear layers of the issue on
// GPUs; on the CPU backend, tiny shapes of the same form that keep the run
// short (M and K multiples of the world size, one N odd). input is the
// operands' dtype (gemmrs.Config.Input; dtype.Invalid: the GEMM's own).
// With e4m3 the CPU's shapes keep each rank's rows of A and B 16-byte
// multiples, which e4m3's only GEMM, the own one, needs, and the second
// has a k tail (K per rank not a multiple of the 128-deep scale blocks);
// with 16-bit operands the second is one the own GEMM cannot compute
// (8-byte rows), so that the fallback runs.
func DefaultGemmShapes(gpu bool, world int, input dtype.DType) []GemmShape {
	if gpu {
		return []GemmShape{{8192, 8192, 28672}, {8192, 8192, 8192}, {4096, 8192, 28672}}
	}
	if input == dtype.E4M3 {
		return []GemmShape{{16 * world, 24, 16 * world}, {8 * world, 33, 144 * world}}
	}
	return []GemmShape{{16 * world, 24, 8 * world}, {8 * world, 33, 4 * world}}
}

// GemmOptions configure the GEMM + reduce-scatter benchmark.
type GemmOptions struct {
	Shapes []GemmShape
	DType  dtype.DType
	// Config is the GemmRS's settings; MaxM, N, KLocal and DType are set
	// per shape. Its Mode is the path Run takes (the "picks" column); both
	// paths are timed whatever it is. Its Tuning is the knobs.
	Config gemmrs.Config
	// Scaling is how e4m3 operands (Config.Input) are scaled: per tensor
	// by unit scales, row-wise or block-wise by powers of two from 2^-2 to
	// 2^2 drawn per row, column or block (so the fp64 reference stays
	// exact).
	Scaling gemm.Scaling
	Iters   int // calls per timed measurement (0: 20 on GPUs, 2 on the CPU)
	Reps    int // rounds of measurements of every path (timePaths); the median is reported
	// Capture times CUDA-graph launches: each path's call is captured
	// once into a graph (Config.Graphs needed) and every timed call
	// launches it, device time without the host's enqueue, as a captured
	// training step runs.
	Capture bool
	// Samples is how many output elements per rank are checked against
	// the exact fp64 sum (0: 64 on GPUs, every element of small outputs).
	Samples int
	Out     Printer
	Status  io.Writer
	Title   string
	Rows    *[]GemmRow // filled on rank 0
}

// GemmRow is one shape's results: per-call device times, each the median
// over Reps measurements of the slowest rank's time, with their spread.
type GemmRow struct {
	Shape  GemmShape
	KLocal int
	// Gemm is the GEMM alone (whole, every SM); RS the GemmRS's
	// reduce-scatter of C alone (ReduceScatter: the sequential calls'
	// context, reading C in place); RSAuto hiercoll's reduce-scatter of the product alone in a
	// context of its own with Auto's engine, the product registered where
	// that engine reads registered inputs (the fastest reduce-scatter of
	// an M×N tensor hiercoll offers); GemmNCCL the GEMM then NCCL's
	// reduce-scatter (0 without NCCL); Sequential the GEMM then
	// hiercoll's; Overlap the overlapped path.
	Gemm, RS, RSAuto, GemmNCCL, Sequential, Overlap                                     time.Duration
	GemmSpread, RSSpread, RSAutoSpread, GemmNCCLSpread, SequentialSpread, OverlapSpread Spread
	// OverBoundRounds is OverBound round by round: each round's overlapped
	// time over the larger of the same round's GEMM and faster
	// reduce-scatter, so that the power cap's drift between rounds, which
	// moves the GEMM alone by several percent, cancels.
	OverBoundRounds []float64
	// GemmAlone and GemmInOverlap are the GEMM's own time on the device in
	// separate calls (median): whole on an idle GPU, and block by block on
	// the GEMM stream of the overlapped path beside the communication.
	GemmAlone, GemmInOverlap time.Duration
	// Stages is where the reduce-scatter of an overlapped call stood, from
	// the call's start, the last of Iters traced calls back to back (the
	// slowest rank's, stage by stage): the last copy landed, the node's
	// reduce finished, the rail finished, the call finished.
	Stages rs2d.Stages
	// BlockEnds is when each block's GEMM ended in that call, from the
	// start of the GEMM (in the order computed; the slowest rank's).
	BlockEnds []time.Duration
	// RankTraces is each rank's own traced call, in rank order: the slowest
	// rank's figures above mix ranks field by field (one rank's copy may
	// wait for its signal, another's for its permit).
	RankTraces []GemmTrace
	// HostEnqueue is the host's time per overlapped call to enqueue it
	// (Run's wall time, back to back, the slowest rank's): calls that
	// take longer than this on the device never wait for the host.
	HostEnqueue time.Duration
	// Captured: the times are of graph launches of captured calls
	// (GemmOptions.Capture).
	Captured bool
	Picks    gemmrs.Mode // the path Run takes for this M
	Split    bool        // the overlapped GEMM computed its first block in two halves
	// Choice is the GEMM the ranks agreed on (own or cublas) and Why rank
	// 0's reason; Segments the signals per destination's rows.
	Choice   gemmrs.Gemm
	Why      string
	Segments int
	// Summed: the overlapped call's own GEMM summed the own block in its
	// epilogue (gemmrs.GemmRS.Summed), so C's own rows stay unwritten.
	Summed      bool
	BoundUse    float64 // largest sampled error / gemmrs.Tolerance (any rank)
	NCCLChecked bool
	NCCLMaxDiff float64 // largest |output − (GEMM + NCCL)| over every element, overlapped and sequential
	// Skipped says why the shape did not run (the GEMM asked for cannot
	// compute it here); its times are then zero.
	Skipped string
	// Simulated: the times are of the CPU backend, not of a GPU.
	Simulated bool
}

// GemmTrace is one rank's traced overlapped call, from its start: when its
// GEMM blocks ended and where its reduce-scatter stood.
type GemmTrace struct {
	BlockEnds []time.Duration
	Stages    rs2d.Stages
}

// TraceLine describes the traced overlapped call (us from its start, the
// slowest rank's): when its GEMM blocks ended; for its scatter to the node
// peers, in order, when each copy was free to start (its GEMM signal and
// permit seen) and when it landed, and when the peers' ready flags were
// seen; when the node reduce passed its waits (the copy engine's) and
// finished, when the rail and the whole call finished; and the
// host's enqueue time per call.
func (r GemmRow) TraceLine() string {
	what := "GEMM blocks end"
	if r.Choice == gemmrs.GemmOwn {
		what = fmt.Sprintf("own GEMM (%d signals per destination) ends", r.Segments)
	}
	split := ""
	if r.Split {
		split = " (the first in two halves)"
	}
	t := GemmTrace{BlockEnds: r.BlockEnds, Stages: r.Stages}
	return fmt.Sprintf("traced call (us): %s %s%s | %s | host enqueue %.0f per call", what, t.ends(), split, t.stages(false), us(r.HostEnqueue))
}

// RankLines describes each rank's traced call as TraceLine does, a line a
// rank, its copies named by the local rank they went to.
func (r GemmRow) RankLines() []string {
	var lines []string
	for k, t := range r.RankTraces {
		lines = append(lines, fmt.Sprintf("rank %d (us): GEMM ends %s | %s", k, t.ends(), t.stages(true)))
	}
	return lines
}

func (t GemmTrace) ends() string {
	var ends []string
	for _, d := range t.BlockEnds {
		ends = append(ends, fmt.Sprintf("%.0f", us(d)))
	}
	return strings.Join(ends, " ")
}

// stages is the trace from the copies to the call's end; named: each copy
// says which local rank it went to.
func (t GemmTrace) stages(named bool) string {
	var copies, ready []string
	st := t.Stages
	for _, p := range st.Peers {
		start := max(p.Signal, p.Permit)
		c := fmt.Sprintf("%.0f→%.0f", us(start), us(p.Landed))
		if p.Early > 0 {
			c = fmt.Sprintf("(first half landed %.0f) ", us(p.Early)) + c
		}
		if named {
			c = fmt.Sprintf("to %d %s", p.LocalRank, c)
		}
		copies = append(copies, c)
		ready = append(ready, fmt.Sprintf("%.0f", us(p.Ready)))
	}
	reduce := fmt.Sprintf("%.0f", us(st.IntraReduce))
	if st.ReduceReady > 0 {
		reduce = fmt.Sprintf("waits passed %.0f, ends %s", us(st.ReduceReady), reduce)
	}
	line := fmt.Sprintf("copies, free to start→landed: %s | ready flags seen %s | node reduce %s",
		strings.Join(copies, " "), strings.Join(ready, " "), reduce)
	if st.InterNode > 0 {
		line += fmt.Sprintf(" | rail %.0f", us(st.InterNode))
	}
	return line + fmt.Sprintf(" | call %.0f", us(st.Total))
}

// Slowdown is GemmInOverlap / GemmAlone.
func (r GemmRow) Slowdown() float64 {
	if r.GemmAlone <= 0 {
		return 0
	}
	return r.GemmInOverlap.Seconds() / r.GemmAlone.Seconds()
}

// OverBound is the overlapped call's time over the larger of the GEMM
// alone and hiercoll's faster reduce-scatter alone (RS or RSAuto): what
// the overlap would take were one half hidden entirely behind the other.
func (r GemmRow) OverBound() float64 {
	rs := r.RS
	if r.RSAuto > 0 {
		rs = min(rs, r.RSAuto)
	}
	bound := max(r.Gemm, rs)
	if bound <= 0 {
		return 0
	}
	return r.Overlap.Seconds() / bound.Seconds()
}

// TFLOPS is the per-rank GEMM rate alone.
func (r GemmRow) TFLOPS() float64 {
	if r.Gemm <= 0 {
		return 0
	}
	return 2 * float64(r.Shape.M) * float64(r.Shape.N) * float64(r.KLocal) / r.Gemm.Seconds() / 1e12
}

// GemmBench returns the GEMM + reduce-scatter benchmark job: for each shape,
// in one run on the same inputs, the GEMM alone, hiercoll's reduce-scatter
// alone, GEMM then NCCL's reduce-scatter, GEMM then hiercoll's, and the
// overlapped path, plus the GEMM's slowdown beside the communication; the
// overlapped output is checked against the exact fp64 sum on sampled
// elements (within gemmrs.Tolerance), scanned whole for NaNs (C is poisoned
// before the checked call), and, with NCCL, compared element by element
// with GEMM + NCCL.
func GemmBench(o GemmOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return gemmBench(ctx, r, o) }
}

func gemmBench(ctx context.Context, r world.Rank, o GemmOptions) (err error) {
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	gpu := r.Dev.Info().Backend == "cuda"
	o = withGemmDefaults(o, gpu, r.Comm.Size())
	ref, why, err := NewReference(ctx, r)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ref.Close()) }()
	rg, err := newRig(r.Dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rg.close()) }()
	seed, err := agreeSeed(ctx, r)
	if err != nil {
		return err
	}

	printGemmHeader(p, r, o, gpu, ref, why)
	var rows []GemmRow
	for _, shape := range o.Shapes {
		row, err := gemmShape(ctx, r, o, shape, seed, ref, rg.s)
		if err != nil {
			return fmt.Errorf("benchmarks: shape %v: %w", shape, err)
		}
		row.Simulated = !gpu
		rows = append(rows, row)
		if row.Skipped != "" {
			p.Printf("%-18s skipped: %s\n", shape, row.Skipped)
			continue
		}
		printGemmRow(p, shape, row)
	}
	p.Printf("  vs nccl = (gemm+nccl)/overlap, vs seq = (gemm+rs)/overlap, slow = gemm@ovl/gemm1; picks = the path Run takes (--mode %v)\n", o.Config.Mode)
	if o.Rows != nil && r.Comm.Rank() == 0 {
		*o.Rows = rows
	}
	return nil
}

// withGemmDefaults fills in the shapes and calls per measurement left
// unset, and at least one measurement.
func withGemmDefaults(o GemmOptions, gpu bool, world int) GemmOptions {
	if len(o.Shapes) == 0 {
		o.Shapes = DefaultGemmShapes(gpu, world, o.Config.Input)
	}
	if o.Iters <= 0 {
		o.Iters = 2
		if gpu {
			o.Iters = 20
		}
	}
	o.Reps = max(o.Reps, 1)
	return o
}

// printGemmHeader prints what bench-gemm runs and the table's heading.
func printGemmHeader(p Printer, r world.Rank, o GemmOptions, gpu bool, ref *Reference, why string) {
	types := o.DType.String()
	if o.Config.Input == dtype.E4M3 && o.Scaling == gemm.PerTensor {
		types = fmt.Sprintf("e4m3 operands (unit scales, B as [N, K/world]) to %v", o.DType)
	} else if o.Config.Input == dtype.E4M3 {
		types = fmt.Sprintf("e4m3 operands (%v-wise scales of 2^-2..2^2, B as [N, K/world]) to %v", o.Scaling, o.DType)
	}
	p.Printf("hiercoll bench-gemm: GEMM + ReduceScatter2D over %s, %s, K split over %d ranks\n", o.Title, types, r.Comm.Size())
	if !gpu {
		p.Printf("  SIMULATED: the CPU backend runs Go code in place of GPU kernels; these times are of this CPU, not of a GPU\n")
	}
	if mm, err := device.MatmulOf(r.Dev); err == nil {
		p.Printf("  GEMM: %s, fp32 accumulation\n", device.MatmulLibrary(mm))
	}
	p.Printf("  overlapped path: C computed in the scatter's order by hiercoll's own GEMM (one launch that signals each segment of a\n" +
		"  destination's rows as its tiles are stored) or by the matmul block by block (a signal per block); the copy engine copies\n" +
		"  each part to the node peers after its signal; sequential path (gemm+rs): the GEMM whole, then the reduce-scatter of C in\n" +
		"  place by a context of the default engine; check: both paths' outputs (poisoned first) against fp64 samples and NCCL\n")
	if ref == nil {
		p.Printf("  NCCL: not run (%s)\n", why)
	} else {
		p.Printf("  NCCL %s on the same C, same processes\n", ref.Version)
	}
	p.Printf("  times per call in us: the median of %s of the mean of %s per path (the paths interleaved call by call in one stream, each round's cycle starting with the next; each call timed from a meeting of the ranks on the stream, a one-row reduce-scatter, to its end; each the slowest rank's), their spread on the line below; gemm@ovl and gemm1 are the GEMM's own device time in single calls (median; where the GEMM sums the own block, gemm@ovl includes its waits for the peer's rows, whose sender is not met)\n"+
		"  each round starts after the ranks' barrier and one untimed call of each path\n",
		Count(o.Reps, "measurement"), Count(o.Iters, "call"))
	switch {
	case o.Capture:
		p.Printf("  captured: each timed call is one graph launch of its path's call, captured once (device time, without the host's enqueue); replayable signals (Config.Graphs)\n")
	case o.Config.Graphs:
		p.Printf("  replayable signals (Config.Graphs), calls enqueued directly\n")
	}
	p.Printf("  rs: the GemmRS's reduce-scatter of C alone (its sequential calls' context); rs auto: alone with Auto's engine, the product registered; ovl/bound: overlap over the larger of gemm and the faster rs\n")
	p.Printf("%-18s %6s %10s %7s %9s %9s %10s %9s %9s %8s %8s %9s %9s %9s %6s %-10s %s\n",
		"shape(MxNxK)", "kloc", "gemm", "TFLOP/s", "rs", "rs auto", "gemm+nccl", "gemm+rs", "overlap", "vs nccl", "vs seq", "ovl/bound", "gemm1", "gemm@ovl", "slow", "picks", "check")
}

// printGemmRow prints a measured shape's table row, its spread, its GEMM's
// choice and its trace.
func printGemmRow(p Printer, shape GemmShape, row GemmRow) {
	vs := func(base, t time.Duration) string {
		if base <= 0 || t <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", base.Seconds()/t.Seconds())
	}
	checkText := fmt.Sprintf("ok %.0f%% of bound", 100*row.BoundUse)
	if row.NCCLChecked {
		checkText += fmt.Sprintf(", |out-nccl| <= %.3g", row.NCCLMaxDiff)
	}
	if row.Summed {
		checkText += ", own block summed in the GEMM"
	}
	p.Printf("%-18s %6d %10.1f %7.1f %9.1f %9.1f %10s %9.1f %9.1f %8s %8s %9.3f %9.1f %9.1f %6.2f %-10s %s\n",
		shape, row.KLocal, us(row.Gemm), row.TFLOPS(), us(row.RS), us(row.RSAuto), usOrDash(row.GemmNCCL), us(row.Sequential), us(row.Overlap),
		vs(row.GemmNCCL, row.Overlap), vs(row.Sequential, row.Overlap), row.OverBound(), us(row.GemmAlone), us(row.GemmInOverlap), row.Slowdown(),
		row.Picks, checkText)
	spread := fmt.Sprintf("spread (us): gemm %v rs %v rs auto %v gemm+rs %v overlap %v", row.GemmSpread, row.RSSpread, row.RSAutoSpread, row.SequentialSpread, row.OverlapSpread)
	if row.GemmNCCL > 0 {
		spread += fmt.Sprintf(" gemm+nccl %v", row.GemmNCCLSpread)
	}
	if len(row.OverBoundRounds) > 0 {
		spread += fmt.Sprintf(" | ovl/bound by round %s", roundRatios(row.OverBoundRounds))
	}
	p.Printf("%-18s %s\n", "", spread)
	p.Printf("%-18s GEMM: %v (%s)\n", "", row.Choice, row.Why)
	p.Printf("%-18s %s\n", "", row.TraceLine())
	if len(row.RankTraces) > 1 {
		for _, l := range row.RankLines() {
			p.Printf("%-18s   %s\n", "", l)
		}
	}
}

// roundRatios is a ratio's rounds as "median [least..greatest]".
func roundRatios(rs []float64) string {
	med, lo, hi := medianOf(rs)
	return fmt.Sprintf("%.3f [%.3f..%.3f]", med, lo, hi)
}

func usOrDash(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", us(d))
}

// gemmInputs generates every rank's A and B from a seed, element by
// element, so that any rank can compute any element of the reference
// without holding the other ranks' matrices: uniform in [-1, 1), rounded
// to the dtype dt; out is the product's dtype (dt's unless dt is e4m3).
// With a row-wise or block-wise scaling (e4m3), each rank's scales too.
type gemmInputs struct {
	seed      uint64
	dt, out   dtype.DType
	world     int
	n, kLocal int
	rowsPer   int
	scaling   gemm.Scaling
	scratch   [4]byte // for value's rounding
}

// scale is element idx of rank q's scales of which (0: A, 1: B), as
// gemm.Scaling lays them out: a power of two from 2^-2 to 2^2 (products of
// scales and elements stay exact in fp64).
func (in *gemmInputs) scale(q, which int, idx int64) float64 {
	h := mix64(mix64(in.seed^uint64(q)<<40^uint64(which+2)<<56) + uint64(idx))
	return math.Ldexp(1, int(h%5)-2)
}

// scales is rank q's product of the scales of A's element (row, k) and
// B's element (k, j) (1 per tensor: the benchmark's unit scales).
func (in *gemmInputs) scales(q, row, j, k int) float64 {
	switch in.scaling {
	case gemm.RowWise:
		return in.scale(q, 0, int64(row)) * in.scale(q, 1, int64(j))
	case gemm.BlockWise:
		m, kb := int64(in.rowsPer*in.world), int64((in.kLocal+gemm.ScaleBlock-1)/gemm.ScaleBlock)
		return in.scale(q, 0, int64(k/gemm.ScaleBlock)*m+int64(row)) * in.scale(q, 1, int64(j/gemm.ScaleBlock)*kb+int64(k/gemm.ScaleBlock))
	}
	return 1
}

// uploadScales writes rank q's scale arrays (gemm.ScaleCounts of them) to
// a and b.
func (in *gemmInputs) uploadScales(dev device.Device, a, b device.Ptr, q int) error {
	na, nb := gemm.ScaleCounts(in.scaling, in.rowsPer*in.world, in.n, in.kLocal)
	for _, x := range []struct {
		p     device.Ptr
		which int
		n     int
	}{{a, 0, na}, {b, 1, nb}} {
		host := make([]byte, 4*x.n)
		for i := 0; i < x.n; i++ {
			binary.LittleEndian.PutUint32(host[4*i:], math.Float32bits(float32(in.scale(q, x.which, int64(i)))))
		}
		if err := dev.CopyToDevice(x.p, host); err != nil {
			return err
		}
	}
	return nil
}

func mix64(x uint64) uint64 { // splitmix64's finaliser
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// raw is element idx of matrix which (0: A, 1: B) of rank q, before
// rounding.
func (in *gemmInputs) raw(q, which int, idx int64) float64 {
	h := mix64(mix64(in.seed^uint64(q)<<40^uint64(which)<<56) + uint64(idx))
	return float64(h>>11)*0x1p-53*2 - 1
}

// value is the element as stored (rounded to the dtype).
func (in *gemmInputs) value(q, which int, idx int64) float64 {
	in.dt.Put(in.scratch[:], 0, in.raw(q, which, idx))
	return in.dt.Get(in.scratch[:], 0)
}

// upload writes rank q's matrix which ([rows, cols], dense) to p, in chunks.
func (in *gemmInputs) upload(dev device.Device, p device.Ptr, q, which int, rows, cols int) error {
	total := int64(rows) * int64(cols)
	es := int64(in.dt.Size())
	const chunk = 4 << 20 // elements
	buf := make([]byte, min(total, chunk)*es)
	for off := int64(0); off < total; off += chunk {
		n := min(chunk, total-off)
		for i := int64(0); i < n; i++ {
			in.dt.Put(buf, int(i), in.raw(q, which, off+i))
		}
		if err := dev.CopyToDevice(p.Add(off*es), buf[:n*es]); err != nil {
			return err
		}
	}
	return nil
}

// expected is rank q's output element (i, j): Σ_r Σ_k A_r[q·rowsPer+i, k]·B_r[k, j],
// and the sum of the products' magnitudes.
func (in *gemmInputs) expected(q, i, j int) (exact, absSum float64) {
	row := int64(q*in.rowsPer + i)
	for r := 0; r < in.world; r++ {
		for k := 0; k < in.kLocal; k++ {
			prod := in.value(r, 0, row*int64(in.kLocal)+int64(k)) * in.value(r, 1, int64(k)*int64(in.n)+int64(j))
			if in.scaling != gemm.PerTensor {
				prod *= in.scales(r, int(row), j, k)
			}
			exact += prod
			absSum += math.Abs(prod)
		}
	}
	return exact, absSum
}

// gemmCase is one shape of the GEMM benchmark on one rank: its GemmRS, the
// rank's inputs and buffers, and the stream its calls run on.
type gemmCase struct {
	r      world.Rank
	o      GemmOptions
	shape  GemmShape
	ref    *Reference
	s      device.Stream
	status Printer

	g         *gemmrs.GemmRS
	in        *gemmInputs
	a, b, out gemmrs.Tensor
	sc        gemmrs.Scales // e4m3's (unit per tensor: none)
	refOut    device.Ptr    // NCCL's output, with a reference
	// auto is the context of RSAuto and product its input: a copy of C.
	auto    *rs2d.Context
	product rs2d.Tensor
}

func gemmShape(ctx context.Context, r world.Rank, o GemmOptions, shape GemmShape, seed uint64, ref *Reference,
	s device.Stream) (row GemmRow, err error) {
	ws := r.Comm.Size()
	if shape.K%ws != 0 || shape.M%ws != 0 {
		return row, fmt.Errorf("M=%d and K=%d must be divisible by the world size %d: %w", shape.M, shape.K, ws, device.ErrInvalidArgument)
	}
	c := &gemmCase{r: r, o: o, shape: shape, ref: ref, s: s, status: Printer{W: o.Status, Rank: r.Comm.Rank()}}
	row = GemmRow{Shape: shape, KLocal: shape.K / ws}
	c.status.Printf("bench-gemm: %v: setting up...\n", shape)
	cfg := o.Config
	cfg.MaxM, cfg.N, cfg.KLocal, cfg.DType = shape.M, shape.N, row.KLocal, o.DType // cfg.Input: fp8 operands
	if c.g, err = gemmrs.New(ctx, r.Comm, r.Dev, cfg); errors.Is(err, device.ErrNotSupported) {
		row.Skipped = err.Error() // the same on every rank: the ranks agree on the GEMM
		return row, nil
	} else if err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, c.g.Close()) }()
	row.Picks = c.g.ModeFor(shape.M)
	row.Split = c.g.SplitsFirstBlock()
	row.Choice, row.Why = c.g.GemmChoice()
	row.Segments = c.g.Segments()
	free, err := c.allocate(seed)
	defer func() { err = errors.Join(err, free()) }()
	if err != nil {
		return row, err
	}

	c.status.Printf("bench-gemm: %v: checking the overlapped and sequential paths...\n", shape)
	if err := c.check(ctx, &row); err != nil {
		return row, err
	}
	if err := c.openAuto(ctx); err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, c.auto.Close()) }()
	c.status.Printf("bench-gemm: %v: timing...\n", shape)
	if err := c.timePaths(ctx, &row); err != nil {
		return row, err
	}
	if err := c.gemmTimes(ctx, &row); err != nil {
		return row, err
	}
	return slowestGemmRow(ctx, r, row)
}

// allocate takes the rank's A, B, output (and NCCL output) buffers and
// uploads its inputs; free releases them, once nothing may read them.
func (c *gemmCase) allocate(seed uint64) (free func() error, err error) {
	r, shape, dt := c.r, c.shape, c.o.DType
	ws, rank := r.Comm.Size(), r.Comm.Rank()
	kl, rpr, es := shape.K/ws, shape.M/ws, int64(dt.Size())
	in, layout := dt, gemm.BKN
	if c.o.Config.Input == dtype.E4M3 {
		in, layout = dtype.E4M3, gemm.BNK
	}
	var taken []device.Ptr
	free = func() error {
		// Whatever failed, nothing may still read the buffers.
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.s.Synchronize(sctx)
		var errs []error
		for _, p := range taken {
			errs = append(errs, r.Dev.Free(p))
		}
		return errors.Join(errs...)
	}
	alloc := func(size int64) device.Ptr {
		if err != nil {
			return 0
		}
		var p device.Ptr
		if p, err = r.Dev.Alloc(size); err == nil {
			taken = append(taken, p)
		}
		return p
	}
	c.a = gemmrs.Tensor{Ptr: alloc(int64(shape.M) * int64(kl) * int64(in.Size())), Rows: shape.M, Cols: kl, DType: in}
	c.b = gemmrs.Tensor{Ptr: alloc(int64(kl) * int64(shape.N) * int64(in.Size())), Rows: kl, Cols: shape.N, DType: in}
	if layout == gemm.BNK {
		c.b.Rows, c.b.Cols = shape.N, kl
	}
	c.out = gemmrs.Tensor{Ptr: alloc(int64(rpr) * int64(shape.N) * es), Rows: rpr, Cols: shape.N, DType: dt}
	c.product = rs2d.Tensor{Ptr: alloc(int64(shape.M) * int64(shape.N) * es), Rows: shape.M, Cols: shape.N, DType: dt}
	if c.ref != nil {
		c.refOut = alloc(int64(rpr) * int64(shape.N) * es)
	}
	scaling := gemm.PerTensor
	if in == dtype.E4M3 && c.o.Scaling != gemm.PerTensor {
		scaling = c.o.Scaling
		na, nb := gemm.ScaleCounts(scaling, shape.M, shape.N, kl)
		c.sc = gemmrs.Scales{Scaling: scaling, A: alloc(4 * int64(na)), B: alloc(4 * int64(nb))}
	}
	if err != nil {
		return free, err
	}
	c.in = &gemmInputs{seed: seed ^ mix64(uint64(shape.M)<<42^uint64(shape.N)<<21^uint64(shape.K)), dt: in, out: dt, world: ws,
		n: shape.N, kLocal: kl, rowsPer: rpr, scaling: scaling}
	if err := c.in.upload(r.Dev, c.a.Ptr, rank, 0, shape.M, kl); err != nil {
		return free, err
	}
	if scaling != gemm.PerTensor {
		if err := c.in.uploadScales(r.Dev, c.sc.A, c.sc.B, rank); err != nil {
			return free, err
		}
	}
	return free, c.in.uploadB(r.Dev, c.b.Ptr, rank, layout)
}

// openAuto makes RSAuto's context and copies the checked product into its
// input, registered where its engine reads registered inputs.
func (c *gemmCase) openAuto(ctx context.Context) (err error) {
	cfg := rs2d.Config{MaxM: c.shape.M, N: c.shape.N, DType: c.o.DType, Transport: c.o.Config.Transport, Timeout: c.o.Config.Timeout,
		Graphs: c.o.Config.Graphs}
	if c.auto, err = rs2d.New(ctx, c.r.Comm, c.r.Dev, cfg); err != nil {
		return fmt.Errorf("the reduce-scatter alone with Auto's engine: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.auto.Close())
		}
	}()
	if err := c.r.Dev.Copy(c.s, c.product.Ptr, c.g.CBuffer().Ptr, c.product.Bytes()); err != nil {
		return err
	}
	if err := c.s.Synchronize(ctx); err != nil {
		return err
	}
	if err := c.auto.Register(ctx, c.product); err != nil && !errors.Is(err, device.ErrNotSupported) {
		return err
	}
	return nil
}

// The paths the benchmark times, each one call.
func (c *gemmCase) runGemm(ctx context.Context) error {
	_, err := c.g.GemmScaled(ctx, c.a, c.b, c.sc, c.s)
	return err
}
func (c *gemmCase) runRS(ctx context.Context) error {
	return c.g.ReduceScatter(ctx, c.g.CBuffer(), c.out, c.s)
}
func (c *gemmCase) runRSAuto(ctx context.Context) error {
	return c.auto.ReduceScatter(ctx, c.product, c.out, c.s)
}
func (c *gemmCase) runNCCL(ctx context.Context) error {
	if err := c.runGemm(ctx); err != nil {
		return err
	}
	return c.ref.ReduceScatter(c.g.CBuffer().Ptr, c.refOut, int64(c.out.Rows*c.out.Cols), c.o.DType, c.s)
}
func (c *gemmCase) runSeq(ctx context.Context) error {
	return c.g.RunModeScaled(ctx, gemmrs.Sequential, c.a, c.b, c.sc, c.out, c.s)
}
func (c *gemmCase) runOverlap(ctx context.Context) error {
	return c.g.RunModeScaled(ctx, gemmrs.Overlap, c.a, c.b, c.sc, c.out, c.s)
}

// meet has the ranks meet on the stream: a reduce-scatter of one row per
// rank, which ends on each rank only once every rank's stream reached it.
func (c *gemmCase) meet(ctx context.Context) error {
	ws := c.r.Comm.Size()
	in := rs2d.Tensor{Ptr: c.product.Ptr, Rows: ws, Cols: c.shape.N, DType: c.o.DType}
	out := rs2d.Tensor{Ptr: c.out.Ptr, Rows: 1, Cols: c.shape.N, DType: c.o.DType}
	return c.auto.ReduceScatter(ctx, in, out, c.s)
}

// check runs the checked overlapped call, C poisoned first so that a block
// read before its GEMM wrote it shows as NaN: sampled elements against the
// exact fp64 sum, C scanned for NaNs and, with NCCL, every element against
// GEMM + NCCL; then the sequential call alike, C and the output poisoned
// first. Every rank fails if any rank's check did.
func (c *gemmCase) check(ctx context.Context, row *GemmRow) error {
	r, shape, dt := c.r, c.shape, c.o.DType
	ws, rank, nodes := r.Comm.Size(), r.Comm.Rank(), r.Comm.Size()/r.Comm.LocalSize()
	outCount := c.out.Rows * c.out.Cols
	if err := c.g.PoisonC(c.s, shape.M); err != nil {
		return err
	}
	if err := c.runOverlap(ctx); err != nil {
		return err
	}
	if err := c.s.Synchronize(ctx); err != nil {
		return err
	}
	got := make([]byte, c.out.Bytes())
	if err := r.Dev.CopyToHost(got, c.out.Ptr); err != nil {
		return err
	}
	var local []error
	var err error
	if row.BoundUse, err = checkSamples(c.in, c.o, rank, nodes, got, outCount); err != nil {
		local = append(local, err)
	}
	cHost := make([]byte, int64(shape.M)*int64(shape.N)*int64(dt.Size()))
	if err := r.Dev.CopyToHost(cHost, c.g.CBuffer().Ptr); err != nil {
		return err
	}
	row.Summed = c.g.Summed()
	for d := 0; d < ws; d++ {
		if d == rank && row.Summed {
			continue // summed into the output instead (gemm.Sum)
		}
		if math.IsNaN(maxAbs(dt, cHost[int64(d)*c.out.Bytes():], outCount)) {
			local = append(local, fmt.Errorf("rank %d: C's rows for rank %d hold NaNs after the overlapped call (a block the GEMM never wrote?)", rank, d))
		}
	}
	seq, err := c.sequentialOutput(ctx)
	if err != nil {
		return err
	}
	if use, err := checkSamples(c.in, c.o, rank, nodes, seq, outCount); err != nil {
		local = append(local, fmt.Errorf("the sequential call: %w", err))
	} else {
		row.BoundUse = max(row.BoundUse, use)
	}
	if c.ref != nil {
		row.NCCLChecked = true
		if err := c.runNCCL(ctx); err != nil {
			return err
		}
		if err := c.s.Synchronize(ctx); err != nil {
			return err
		}
		refHost := make([]byte, len(got))
		if err := r.Dev.CopyToHost(refHost, c.refOut); err != nil {
			return err
		}
		if row.Summed { // the GEMM alone before NCCL wrote C whole
			if err := r.Dev.CopyToHost(cHost, c.g.CBuffer().Ptr); err != nil {
				return err
			}
		}
		maxC := maxAbs(dt, cHost, shape.M*shape.N)
		for _, out := range []struct {
			what string
			got  []byte
		}{{"the overlapped call", got}, {"the sequential call", seq}} {
			diff, err := agreeWithNCCL(dt, out.got, refHost, outCount, ws, nodes, maxC, rank)
			if err != nil {
				local = append(local, fmt.Errorf("%s: %w", out.what, err))
			}
			row.NCCLMaxDiff = max(row.NCCLMaxDiff, diff)
		}
	}
	if _, err := bootstrap.Agree(ctx, r.Comm, errors.Join(local...), nil); err != nil {
		return fmt.Errorf("check failed: %w", err)
	}
	return nil
}

// sequentialOutput runs a sequential call, C and the output poisoned
// first, and returns this rank's output.
func (c *gemmCase) sequentialOutput(ctx context.Context) ([]byte, error) {
	if err := c.g.PoisonC(c.s, c.shape.M); err != nil {
		return nil, err
	}
	if err := c.s.Synchronize(ctx); err != nil {
		return nil, err
	}
	if err := c.r.Dev.CopyToDevice(c.out.Ptr, check.Poison(c.o.DType, c.out.Rows*c.out.Cols)); err != nil {
		return nil, err
	}
	if err := c.runSeq(ctx); err != nil {
		return nil, err
	}
	if err := c.s.Synchronize(ctx); err != nil {
		return nil, err
	}
	got := make([]byte, c.out.Bytes())
	return got, c.r.Dev.CopyToHost(got, c.out.Ptr)
}

// Spread is the least and the greatest of a time's measurements.
type Spread struct{ Min, Max time.Duration }

func (s Spread) String() string { return fmt.Sprintf("[%.1f..%.1f]", us(s.Min), us(s.Max)) }

// timePaths warms every path up (first calls pay for setup), then times
// them within each of Reps rounds interleaved call by call in one unbroken
// stream, each round's cycle starting with the next path; each time is the
// median of the rounds' slowest-rank means. Interleaved, every path's calls
// run at the power-cap state the others' run at, so that a round's ratios
// compare like with like: timed in turn, a path at a time, the GEMM alone
// moved by up to 12% between the measurements of one run and rounds of the
// overlapped call read below their own GEMM's (RESULTS.md). Each call is
// timed from the end of a meeting of the ranks on the stream (meet) to its
// own end: the ranks' GPUs run the GEMM at different speeds, and a call
// that starts where the previous one ended on each rank would add their
// skew to the first path after it that meets. A round follows the ranks'
// barrier and one untimed call of each path. With Capture each path's call
// is captured once, after its first call, and launched as a graph.
func (c *gemmCase) timePaths(ctx context.Context, row *GemmRow) (err error) {
	type path struct {
		dst    *time.Duration
		spread *Spread
		run    func(context.Context) error
		got    []time.Duration
	}
	paths := []*path{{&row.Gemm, &row.GemmSpread, c.runGemm, nil}, {&row.RS, &row.RSSpread, c.runRS, nil},
		{&row.RSAuto, &row.RSAutoSpread, c.runRSAuto, nil}, {&row.Sequential, &row.SequentialSpread, c.runSeq, nil},
		{&row.Overlap, &row.OverlapSpread, c.runOverlap, nil}}
	if c.ref != nil {
		paths = append(paths, &path{&row.GemmNCCL, &row.GemmNCCLSpread, c.runNCCL, nil})
	}
	for _, x := range paths {
		if err := x.run(ctx); err != nil {
			return err
		}
	}
	if err := c.s.Synchronize(ctx); err != nil {
		return err
	}
	if c.o.Capture {
		runs := make([]func() error, len(paths))
		for i, x := range paths {
			run := x.run
			runs[i] = func() error { return run(ctx) }
		}
		launches, closeAll, cerr := captureEach(c.r.Dev, c.s, 1, runs)
		if cerr != nil {
			return fmt.Errorf("benchmarks: capturing a call: %w", cerr)
		}
		defer func() { err = errors.Join(err, closeAll()) }()
		for i, x := range paths {
			launch := launches[i]
			x.run = func(context.Context) error { return launch() }
		}
		row.Captured = true
	}
	iters := max(c.o.Iters, 1)
	calls := len(paths) * iters            // per round; the k-th is of path (rep + k) % len(paths)
	marks := make([]device.Event, 2*calls) // marks[2k] and marks[2k+1] bound the k-th call
	defer func() {
		for _, e := range marks {
			if e != nil {
				err = errors.Join(err, e.Close())
			}
		}
	}()
	for k := range marks {
		if marks[k], err = c.r.Dev.NewTimedEvent(); err != nil {
			return err
		}
	}
	for rep := 0; rep < max(c.o.Reps, 1); rep++ {
		if err := c.r.Comm.Barrier(ctx); err != nil {
			return err
		}
		for _, x := range paths {
			if err := x.run(ctx); err != nil {
				return err
			}
		}
		for k := range calls {
			j := (rep + k) % len(paths)
			if err := c.meet(ctx); err != nil {
				return err
			}
			if err := marks[2*k].Record(c.s); err != nil {
				return err
			}
			if err := paths[j].run(ctx); err != nil {
				return err
			}
			if err := marks[2*k+1].Record(c.s); err != nil {
				return err
			}
		}
		if err := c.s.Synchronize(ctx); err != nil {
			return err
		}
		sums := make([]time.Duration, len(paths))
		for k := range calls {
			d, err := marks[2*k+1].Since(marks[2*k])
			if err != nil {
				return err
			}
			sums[(rep+k)%len(paths)] += d
		}
		ds := make([]uint64, len(paths))
		for j, sum := range sums {
			ds[j] = uint64(sum / time.Duration(iters))
		}
		slowest, err := mostOverRanks(ctx, c.r, ds)
		if err != nil {
			return err
		}
		for j, x := range paths {
			x.got = append(x.got, time.Duration(slowest[j]))
		}
	}
	for _, x := range paths {
		*x.dst, x.spread.Min, x.spread.Max = medianOf(x.got)
	}
	gemm, rs, rsAuto, overlap := paths[0].got, paths[1].got, paths[2].got, paths[4].got
	for k := range overlap {
		round := GemmRow{Gemm: gemm[k], RS: rs[k], RSAuto: rsAuto[k], Overlap: overlap[k]}
		row.OverBoundRounds = append(row.OverBoundRounds, round.OverBound())
	}
	return nil
}

// gemmTimes measures the GEMM's own time in single calls (median): alone,
// and inside the overlapped path (on its GEMM stream, beside the
// communication); then one traced overlapped call.
func (c *gemmCase) gemmTimes(ctx context.Context, row *GemmRow) (err error) {
	single := func(run func(context.Context) error) (time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < max(c.o.Iters, 3); i++ {
			if err := run(ctx); err != nil {
				return 0, err
			}
			if err := c.s.Synchronize(ctx); err != nil {
				return 0, err
			}
			d, err := c.g.LastGemmTime()
			if err != nil {
				return 0, err
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	if row.GemmAlone, err = single(c.runGemm); err != nil {
		return err
	}
	if row.GemmInOverlap, err = single(c.runOverlap); err != nil {
		return err
	}
	row.Stages, row.BlockEnds, row.HostEnqueue, err = tracedCall(ctx, c.g, c.s, max(c.o.Iters, 3), func() error { return c.runOverlap(ctx) })
	return err
}

// tracedCall runs calls overlapped calls back to back with tracing on and
// returns the last one's reduce-scatter stages and GEMM block ends (a call
// in the steady state, started when the previous one ended: a lone call's
// stages would mostly show how far apart the ranks' hosts started), and the
// host's mean time to enqueue a call.
func tracedCall(ctx context.Context, g *gemmrs.GemmRS, s device.Stream, calls int, run func() error) (
	st rs2d.Stages, ends []time.Duration, enqueue time.Duration, err error) {
	if err := g.Trace(true); err != nil {
		return st, nil, 0, errors.Join(err, g.Trace(false))
	}
	defer func() { err = errors.Join(err, g.Trace(false)) }()
	start := time.Now()
	for i := 0; i < calls; i++ {
		if err := run(); err != nil {
			return st, nil, 0, err
		}
	}
	enqueue = time.Since(start) / time.Duration(calls)
	if err := s.Synchronize(ctx); err != nil {
		return st, nil, 0, err
	}
	if st, err = g.LastStages(); err != nil {
		return st, nil, 0, err
	}
	ends, err = g.LastBlockEnds()
	return st, ends, enqueue, err
}

// checkSamples compares sampled output elements (every element of small
// outputs) with the exact sum, within gemmrs.Tolerance, and scans the whole
// output for NaNs. It returns the largest fraction of the bound used.
func checkSamples(in *gemmInputs, o GemmOptions, rank, nodes int, got []byte, count int) (float64, error) {
	for e := 0; e < count; e++ {
		if math.IsNaN(in.out.Get(got, e)) {
			return 0, fmt.Errorf("rank %d: output element (%d, %d) is NaN (read before it was computed?)", rank, e/in.n, e%in.n)
		}
	}
	samples := o.Samples
	if samples <= 0 {
		samples = 64
		if count <= 4096 {
			samples = count
		}
	}
	var elems []int
	if samples >= count {
		for e := 0; e < count; e++ {
			elems = append(elems, e)
		}
	} else {
		rng := rand.New(rand.NewPCG(in.seed, uint64(rank)))
		elems = append(elems, 0, count-1) // the corners, then random ones
		for len(elems) < samples {
			elems = append(elems, rng.IntN(count))
		}
	}
	worst := 0.0
	for _, e := range elems {
		i, j := e/in.n, e%in.n
		exact, absSum := in.expected(rank, i, j)
		v := in.out.Get(got, e)
		tol := gemmrs.Tolerance(in.out, in.kLocal, in.world, nodes, absSum)
		if d := math.Abs(v - exact); d > tol {
			return worst, fmt.Errorf("rank %d: output element (%d, %d) is %g, the exact sum %g (tolerance %.3g)", rank, i, j, v, exact, tol)
		} else {
			worst = max(worst, d/tol)
		}
	}
	return worst, nil
}

// agreeWithNCCL compares the overlapped output with GEMM + NCCL's element
// by element. Both sum the same products; they differ by the roundings of
// their reduce-scatters (rounds for hiercoll, up to world−1 for NCCL's
// ring) and of their GEMMs' outputs (a different kernel per block may round
// an element of C_r to the neighbouring value: one ulp, 2u|C_r|, per rank),
// each at most u times a partial sum bounded by world·max|C|:
//
//	|overlap − nccl| <= ((rounds + world + 1)·u + 2·world·2^-24) · world·max|C|
//
// (assuming, as holds for cuBLAS in practice, that the two GEMMs' fp32
// accumulations of one element differ by less than one ulp of the dtype).
func agreeWithNCCL(dt dtype.DType, got, ref []byte, count, world, nodes int, maxC float64, rank int) (float64, error) {
	u := dt.UnitRoundoff()
	bound := ((float64(rs2d.Roundings(nodes)+world+1))*u + 2*float64(world)/(1<<24)) * float64(world) * maxC
	worst := 0.0
	for e := 0; e < count; e++ {
		a, b := dt.Get(got, e), dt.Get(ref, e)
		d := math.Abs(a - b)
		if math.IsNaN(d) || d > bound {
			return d, fmt.Errorf("rank %d: element %d is %g overlapped, %g with GEMM + NCCL (agreement bound %.3g)", rank, e, a, b, bound)
		}
		worst = max(worst, d)
	}
	return worst, nil
}

// slowestGemmRow replaces the row's times by the slowest rank's and its
// error measures by the largest, and keeps every rank's traced call.
func slowestGemmRow(ctx context.Context, r world.Rank, row GemmRow) (GemmRow, error) {
	times := []*time.Duration{&row.Gemm, &row.RS, &row.RSAuto, &row.GemmNCCL, &row.Sequential, &row.Overlap, &row.GemmAlone, &row.GemmInOverlap, &row.HostEnqueue}
	traced := tracePoints(&row.Stages, row.BlockEnds)
	times = append(times, traced...)
	var vs []uint64
	for _, t := range times {
		vs = append(vs, uint64(*t))
	}
	vs = append(vs, math.Float64bits(row.BoundUse), math.Float64bits(row.NCCLMaxDiff))
	for _, p := range row.Stages.Peers {
		vs = append(vs, uint64(p.LocalRank))
	}
	all, err := gatherOverRanks(ctx, r, vs)
	if err != nil {
		return row, err
	}
	// Each rank's trace, in the order tracePoints lists its times.
	first := len(times) - len(traced)
	for _, x := range all {
		t := GemmTrace{BlockEnds: slices.Clone(row.BlockEnds), Stages: row.Stages}
		t.Stages.Peers = slices.Clone(row.Stages.Peers)
		for i, d := range tracePoints(&t.Stages, t.BlockEnds) {
			*d = time.Duration(x[first+i])
		}
		for i := range t.Stages.Peers {
			t.Stages.Peers[i].LocalRank = int(x[len(times)+2+i])
		}
		row.RankTraces = append(row.RankTraces, t)
	}
	most := largest(all)
	for i, t := range times {
		*t = time.Duration(most[i])
	}
	row.BoundUse = math.Float64frombits(most[len(times)])
	row.NCCLMaxDiff = math.Float64frombits(most[len(times)+1])
	return row, nil
}

// tracePoints lists a traced call's times: its stages' and its blocks'
// ends.
func tracePoints(st *rs2d.Stages, ends []time.Duration) []*time.Duration {
	ts := []*time.Duration{&st.Scatter, &st.ReduceReady, &st.IntraReduce, &st.InterNode, &st.Total}
	for i := range st.Peers {
		ts = append(ts, st.Peers[i].Points()...)
	}
	for i := range ends {
		ts = append(ts, &ends[i])
	}
	return ts
}

// maxAbs returns the largest magnitude among the first count elements of a
// buffer of dt (NaN if any element is NaN).
func maxAbs(dt dtype.DType, b []byte, count int) float64 {
	m := 0.0
	for i := 0; i < count; i++ {
		v := math.Abs(dt.Get(b, i))
		if math.IsNaN(v) {
			return v
		}
		m = max(m, v)
	}
	return m
}

// WriteGemmCSV writes the rows as CSV (times in microseconds).
func WriteGemmCSV(w io.Writer, rows []GemmRow, world int, dt dtype.DType) error {
	if _, err := fmt.Fprintln(w, "M,N,K,k_local,world,dtype,gemm_us,gemm_tflops,rs_us,gemm_nccl_us,gemm_rs_us,overlap_us,"+
		"gemm_single_us,gemm_in_overlap_us,gemm_slowdown,picks,bound_use,max_abs_diff_vs_nccl,gemm,simulated,rs_auto_us,overlap_over_bound"); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Skipped != "" {
			continue // no times
		}
		if _, err := fmt.Fprintf(w, "%d,%d,%d,%d,%d,%v,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%v,%.4f,%g,%v,%v,%.2f,%.4f\n",
			r.Shape.M, r.Shape.N, r.Shape.K, r.KLocal, world, dt, us(r.Gemm), r.TFLOPS(), us(r.RS), us(r.GemmNCCL),
			us(r.Sequential), us(r.Overlap), us(r.GemmAlone), us(r.GemmInOverlap), r.Slowdown(), r.Picks, r.BoundUse, r.NCCLMaxDiff, r.Choice, r.Simulated,
			us(r.RSAuto), r.OverBound()); err != nil {
			return err
		}
	}
	return nil
}
