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
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/internal/sizes"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// BenchOptions configure the bandwidth benchmark.
type BenchOptions struct {
	Sizes []int64 // input bytes per rank
	N     int     // columns; M follows from the size
	DType dtype.DType
	Iters int // timed calls per measurement (0: by size)
	Reps  int // measurements per size, hiercoll and NCCL in turn; the median is reported, with the spread
	// Variants are benchmarked one after the other, each with its own
	// context (MaxM, N and DType are set here).
	Variants []Variant
	Out      Printer
	Title    string
	Rows     *[]BenchRow // filled on rank 0
	// CopyIn has an engine with a symmetric input (pull) read the
	// caller's buffer, which each call copies in, instead of rows put
	// there once (zero copy).
	CopyIn bool
	// Register has the pull engine read the caller's plain buffer in
	// place: registered once per variant (rs2d Context.Register) before
	// anything is timed, so no call copies it.
	Register bool
	// Capture times CUDA-graph launches instead of enqueued calls: per
	// path and size, Iters calls captured once into a graph, each
	// measurement one launch of it (device time without the host's
	// enqueue, as a training step captured in a graph runs). Needs
	// variants with Config.Graphs.
	Capture bool
	// Trace makes one more call after each size, traced on every rank
	// (rs2d Context.Trace), and prints rank 0's stages: when the call
	// ended and, for a call in rounds, when each round did.
	Trace bool
	// InputOffset puts the caller's plain buffer (the input NCCL reads,
	// and hiercoll's but with the pull engine's zero copy) InputOffset
	// bytes past a 16-byte aligned base, 0 to 15: as a view into a larger
	// tensor would lie.
	InputOffset int64
}

// BenchRow is one size of the table.
type BenchRow struct {
	Variant string
	Bytes   int64 // input per rank
	Count   int64 // elements of input per rank
	M, N    int
	// Time and NCCLTime are per call, the median over the measurements of
	// the slowest rank's time in each; the spreads are those
	// measurements' least and greatest. NCCL's are 0 when it did not run.
	Time, TimeMin, TimeMax     time.Duration
	NCCLTime, NCCLMin, NCCLMax time.Duration
	MaxErr                     float64 // max |hiercoll - NCCL| (int32: mismatching elements)
	Checked                    bool    // the output was compared with NCCL's
	Simulated                  bool    // the times are of the CPU backend, not of a GPU
	// ZeroCopy: hiercoll read the rows in place from its context's
	// symmetric input (rs2d Context.Input), where they were put once.
	ZeroCopy bool
	// Registered: hiercoll read the caller's plain buffer in place,
	// registered once (rs2d Context.Register, BenchOptions.Register); the
	// variant's name ends in "registered".
	Registered bool
	// Captured: the times are of CUDA-graph launches of the calls
	// (BenchOptions.Capture), hiercoll's and NCCL's alike.
	Captured bool
}

// BusBW is the bus bandwidth of t for this row in GB/s: bytes/t × (n−1)/n.
func (r BenchRow) BusBW(t time.Duration, world int) float64 {
	if t <= 0 {
		return 0
	}
	return float64(r.Bytes) / t.Seconds() / 1e9 * float64(world-1) / float64(world)
}

// AlgBW is bytes/t in GB/s.
func (r BenchRow) AlgBW(t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return float64(r.Bytes) / t.Seconds() / 1e9
}

// DefaultSizes are 1 MiB to 2 GiB per rank, by powers of 2 (CPU: up to 64 MiB).
func DefaultSizes(gpu bool) []int64 {
	top := int64(2 << 30)
	if !gpu {
		top = 64 << 20
	}
	var sizes []int64
	for s := int64(1 << 20); s <= top; s *= 2 {
		sizes = append(sizes, s)
	}
	return sizes
}

// Bench returns the benchmark job.
func Bench(o BenchOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return bench(ctx, r, o) }
}

// MinBenchSize is the smallest input per rank Bench measures with n
// columns of dt on world ranks: one row per rank.
func MinBenchSize(n int, dt dtype.DType, world int) int64 {
	return int64(n) * int64(dt.Size()) * int64(world)
}

// rowsFor returns, for each size, the M of the largest input of at most
// that many bytes per rank (a multiple of world rows of n columns). A size
// below one row per rank, or options that make no sense, are refused.
func (o BenchOptions) rowsFor(world int) ([]int, error) {
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("benchmarks: bench: %s: %w", fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case o.N <= 0:
		return bad("N=%d columns: want a positive number", o.N)
	case !o.DType.Valid():
		return bad("dtype %v", o.DType)
	case len(o.Sizes) == 0:
		return bad("no sizes")
	case o.Iters < 0 || o.Reps < 0:
		return bad("%d iterations, %d repetitions: want positive numbers (0: default)", o.Iters, o.Reps)
	case o.InputOffset < 0 || o.InputOffset > 15:
		return bad("input offset of %d bytes: want 0 to 15", o.InputOffset)
	case o.InputOffset%int64(o.DType.Size()) != 0:
		return bad("input offset of %d bytes: want a multiple of %v's %d-byte elements", o.InputOffset, o.DType, o.DType.Size())
	}
	quantum, ok := sizes.Product(int64(o.N), int64(o.DType.Size()), int64(world))
	if !ok {
		return bad("N=%d columns of %v on %d ranks do not fit", o.N, o.DType, world)
	}
	ms := make([]int, len(o.Sizes))
	for i, size := range o.Sizes {
		if size < quantum || size > sizes.Max {
			return bad("a size of %d bytes per rank: with N=%d %v on %d ranks, sizes run from %d bytes (one row per rank; a smaller N allows smaller sizes) to 2^50",
				size, o.N, o.DType, world, quantum)
		}
		ms[i] = int(size/quantum) * world
	}
	return ms, nil
}

func bench(ctx context.Context, r world.Rank, o BenchOptions) (err error) {
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	ws := r.Comm.Size()
	ms, err := o.rowsFor(ws)
	if err != nil {
		return err
	}
	maxM := slices.Max(ms)
	variants := o.Variants
	if len(variants) == 0 {
		variants = []Variant{{}}
	}

	ref, why, err := NewReference(ctx, r)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ref.Close()) }()
	buf, err := allocBuffers(r.Dev, maxM, o.N, ws, o.DType, ref != nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, buf.free()) }()
	buf.in = buf.inBase.Add(o.InputOffset)
	rg, err := newRig(r.Dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rg.close()) }()
	s, t0, t1 := rg.s, rg.t0, rg.t1
	if err := fillRandom(r, buf, maxM, o.N, o.DType); err != nil {
		return err
	}

	p.Printf("hiercoll bench: ReduceScatter2D over %s, %v, N=%d\n", o.Title, o.DType, o.N)
	if r.Dev.Info().Backend != "cuda" {
		p.Printf("  SIMULATED: the CPU backend runs Go code in place of GPU kernels; these times are of this CPU, not of a GPU\n")
	}
	if ref == nil {
		p.Printf("  NCCL: not run (%s)\n", why)
	} else {
		p.Printf("  NCCL %s on the same buffers, same processes, alternating with hiercoll\n", ref.Version)
	}
	p.Printf("  times: the slowest rank's mean per call, the median of %s (hiercoll and NCCL in turn, which goes first alternating), their spread at the end of the line; busbw = bytes/time x (n-1)/n; sizes are whole rows\n", Count(max(o.Reps, 1), "measurement"))
	if o.Capture {
		p.Printf("  captured: each measurement is one CUDA-graph launch of the calls captured once (hiercoll's and NCCL's alike): device time, without the host's enqueue\n")
	}
	var rows []BenchRow
	for _, vcfg := range variants {
		vrows, err := benchVariant(ctx, r, o, vcfg, ref, buf, s, t0, t1, ms, maxM)
		if err != nil {
			return err
		}
		rows = append(rows, vrows...)
	}
	if o.Rows != nil && r.Comm.Rank() == 0 {
		*o.Rows = rows
	}
	return nil
}

// Variant is one setting of a context the benchmark measures: its Config,
// tuning included.
type Variant struct {
	Config rs2d.Config
}

// Name describes the variant's settings in effect on a device of sms SMs
// (engine resolved; 0 knobs: by size or default).
func (v Variant) Name(sms int) string {
	k := v.Config.Tuning
	red := k.ReductionSMsOf(v.Config.Engine, sms)
	name := fmt.Sprintf("%v red%d ch%d", v.Config.Engine, red, k.Chunks)
	if v.Config.Engine == rs2d.EnginePull { // one kernel on an SM budget (0: default)
		name = fmt.Sprintf("pull sms%d", k.ReductionSMs)
		switch {
		case k.OneShotBytes < 0:
			name += " oneshot-off"
		case k.OneShotBytes > 0:
			name += fmt.Sprintf(" oneshot%d", k.OneShotBytes)
		}
		switch {
		case k.CopyEnginePullBytes < 0:
			name += " cepull-off"
		case k.CopyEnginePullBytes > 0:
			name += fmt.Sprintf(" cepull%d", k.CopyEnginePullBytes)
		}
		if k.CopyEnginePullChunk > 0 {
			name += fmt.Sprintf(" cechunk%d", k.CopyEnginePullChunk)
		}
		switch {
		case k.RingFromBytes < 0:
			name += " ring-off"
		case k.RingFromBytes > 0:
			name += fmt.Sprintf(" ring%d", k.RingFromBytes)
		}
		if k.RingChannels > 0 || k.RingSlots > 0 || k.RingChunkBytes > 0 {
			name += fmt.Sprintf(" ring-slots%d chunk%d channels%d", k.RingSlots, k.RingChunkBytes, k.RingChannels)
		}
	}
	if v.Config.Engine == rs2d.EngineRing { // its own tuning (0: default)
		name = fmt.Sprintf("ring slots%d chunk%d channels%d", k.RingSlots, k.RingChunkBytes, k.RingChannels)
	}
	if k.RailLanes > 0 {
		name += fmt.Sprintf(" lanes%d", k.RailLanes)
	}
	if v.Config.Graphs {
		name += " graphs"
	}
	return name
}

func benchVariant(ctx context.Context, r world.Rank, o BenchOptions, v Variant, ref *Reference, buf *buffers,
	s device.Stream, t0, t1 device.Event, ms []int, maxM int) (rows []BenchRow, err error) {
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	ws := r.Comm.Size()
	gpu := r.Dev.Info().Backend == "cuda"
	rowBytes := int64(o.N) * int64(o.DType.Size())
	cfg := v.Config
	cfg.MaxM, cfg.N, cfg.DType = maxM, o.N, o.DType
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	v.Config = rs.Config()
	name := v.Name(r.Dev.Info().SMs)
	// Once, before anything is timed: every size's call reads the first
	// rows of the registered buffer.
	if err := registerInput(ctx, rs, buf, o.Register); err != nil {
		return nil, err
	}
	if o.Register {
		name += " registered"
	}
	printVariant(p, rs, name, ms[len(ms)-1], o)
	for _, m := range ms {
		rowsPer := m / ws
		row := BenchRow{Variant: name, Bytes: int64(m) * rowBytes, Count: int64(m) * int64(o.N), M: m, N: o.N, Simulated: !gpu,
			Registered: o.Register, Captured: o.Capture}
		// The row's first columns say what is being measured; the rest
		// follows when it is done (progress without a line between rows).
		p.Printf("%12d %12d %6s", row.Bytes, row.Count, o.DType)
		in := rs2d.Tensor{Ptr: buf.in, Rows: m, Cols: o.N, DType: o.DType}
		if sym, err := rs.Input(m); err == nil && !o.CopyIn && !o.Register {
			// Zero copy: the rows go into the context's symmetric input
			// once, as a producer would write them there; NCCL reads the
			// same rows from the plain buffer.
			if err := r.Dev.Copy(s, sym.Ptr, buf.in, in.Bytes()); err != nil {
				return nil, err
			}
			in = sym
			row.ZeroCopy = true
		}
		out := rs2d.Tensor{Ptr: buf.out, Rows: rowsPer, Cols: o.N, DType: o.DType}
		iters := o.Iters
		if iters == 0 {
			iters = defaultIters(row.Bytes, gpu)
		}
		runH := func() error { return rs.ReduceScatter(ctx, in, out, s) }
		runN := func() error { return ref.ReduceScatter(buf.in, buf.ref, int64(rowsPer*o.N), o.DType, s) }
		paths := []func() error{runH}
		if ref != nil {
			paths = append(paths, runN)
		}
		if err := warmUp(ctx, s, paths); err != nil {
			return nil, err
		}
		if ref != nil {
			row.Checked = true
			if row.MaxErr, err = compareOutputs(r, buf, rowsPer, o.N, o.DType); err != nil {
				return nil, err
			}
		}
		var times [][]time.Duration
		if o.Capture {
			times, err = measureCaptured(ctx, r, s, t0, t1, iters, max(o.Reps, 1), paths)
		} else {
			times, err = measureInTurn(ctx, r, s, t0, t1, iters, max(o.Reps, 1), paths)
		}
		if err != nil {
			return nil, err
		}
		row.Time, row.TimeMin, row.TimeMax = medianOf(times[0])
		if ref != nil {
			row.NCCLTime, row.NCCLMin, row.NCCLMax = medianOf(times[1])
		}
		if row.Checked {
			worst, err := mostOverRanks(ctx, r, []uint64{math.Float64bits(row.MaxErr)})
			if err != nil {
				return nil, err
			}
			row.MaxErr = math.Float64frombits(worst[0])
		}
		rows = append(rows, row)
		printRowEnd(p, row, ws)
		if o.Trace {
			if err := traceLine(ctx, p, rs, s, runH); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

// traceLine makes one more call with run, traced, and prints rank 0's
// stages: the call's end and, in rounds, each round's end (µs from the
// call's start on the device; the rounds' in the order they were
// enqueued).
func traceLine(ctx context.Context, p Printer, rs *rs2d.Context, s device.Stream, run func() error) error {
	if err := rs.Trace(true); err != nil {
		return err
	}
	err := run()
	if err == nil {
		err = s.Synchronize(ctx)
	}
	var st rs2d.Stages
	if err == nil {
		st, err = rs.LastStages()
	}
	if err := errors.Join(err, rs.Trace(false)); err != nil {
		return err
	}
	line := fmt.Sprintf("%12s traced on rank 0: the call %.1f us", "", us(st.Total))
	if len(st.Rounds) > 0 {
		line += fmt.Sprintf("; its %d rounds ended at %s us, their staging copies at %s us", len(st.Rounds), times(st.Rounds), times(st.Staged))
	}
	p.Printf("%s\n", line)
	return nil
}

// times prints ds in µs, "-" for a 0 (a round that staged nothing).
func times(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = usOrDash(d)
	}
	return strings.Join(out, " ")
}

// warmUp runs each of paths twice, in turn (kernel compilation, NCCL's
// first-call setup), and waits for them: the outputs are then the ones to
// check.
func warmUp(ctx context.Context, s device.Stream, paths []func() error) error {
	for w := 0; w < 2; w++ {
		for _, run := range paths {
			if err := run(); err != nil {
				return err
			}
		}
	}
	return s.Synchronize(ctx)
}

// printVariant prints a variant's heading: what it sends between nodes at
// the largest size (m rows), its settings in effect, its memory, where its
// input lies, and the table's column names.
func printVariant(p Printer, rs *rs2d.Context, name string, m int, o BenchOptions) {
	cfg := rs.Config()
	bytes := int64(m) * int64(cfg.N) * int64(cfg.DType.Size())
	if plan := rs.PlanFor(m); plan.InterNodeBytes > 0 {
		p.Printf("  bytes per rank to other nodes: hiercoll %.3f x size ((nnodes-1)/world); a flat ring sends %.3f x size ((world-1)/world) to its neighbour, across the node boundary on the boundary ranks\n",
			float64(plan.InterNodeBytes)/float64(bytes), float64(plan.FlatRingBytes)/float64(bytes))
	}
	p.Printf("variant %q: engine %v, reduction SMs %d, chunks %d (0: by size), transport %s\n",
		name, cfg.Engine, rs.ReductionSMs(), cfg.Tuning.Chunks, rs.Transport())
	p.Printf("  symmetric memory: %v\n", rs.Memory())
	if o.InputOffset != 0 {
		p.Printf("  the plain buffer lies %d bytes past a 16-byte aligned base (--input-offset)\n", o.InputOffset)
	}
	if o.Register {
		p.Printf("  input: the plain buffer NCCL reads too, registered once (Context.Register) and read in place by the peers (--register)\n")
	} else if _, err := rs.Input(cfg.MaxM); err == nil {
		if o.CopyIn {
			p.Printf("  input: the plain buffer NCCL reads too, copied into the context's symmetric input by each call (--copy-in)\n")
		} else {
			p.Printf("  input: written once into the context's symmetric input (zero copy); NCCL reads the same rows from a plain buffer\n")
		}
	}
	p.Printf("%12s %12s %6s %10s %8s %8s %10s %8s %8s %7s %9s  %s\n",
		"size(B)", "count", "type", "time(us)", "algbw", "busbw", "nccl(us)", "algbw", "busbw", "speedup", "maxerr", "spread (us)")
}

// measureInTurn times each of paths reps times (iters calls each), the paths
// in turn with which goes first alternating, and returns per path the
// slowest rank's time of each measurement.
func measureInTurn(ctx context.Context, r world.Rank, s device.Stream, t0, t1 device.Event, iters, reps int,
	paths []func() error) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(paths))
	for rep := 0; rep < reps; rep++ {
		ds := make([]uint64, len(paths))
		for i := range paths {
			j := (rep + i) % len(paths)
			d, err := timeCalls(ctx, r, s, t0, t1, iters, paths[j])
			if err != nil {
				return nil, err
			}
			ds[j] = uint64(d)
		}
		slowest, err := mostOverRanks(ctx, r, ds)
		if err != nil {
			return nil, err
		}
		for j := range paths {
			times[j] = append(times[j], time.Duration(slowest[j]))
		}
	}
	return times, nil
}

// measureCaptured is measureInTurn over CUDA graphs: each path's iters
// calls are captured once into a graph, and each measurement launches it;
// the times are per call.
func measureCaptured(ctx context.Context, r world.Rank, s device.Stream, t0, t1 device.Event, iters, reps int,
	paths []func() error) (times [][]time.Duration, err error) {
	launches, closeAll, err := captureEach(r.Dev, s, iters, paths)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	if times, err = measureInTurn(ctx, r, s, t0, t1, 1, reps, launches); err != nil {
		return nil, err
	}
	for _, path := range times {
		for k := range path {
			path[k] /= time.Duration(iters)
		}
	}
	return times, nil
}

// captureEach captures iters calls of each of runs on s into a graph of
// its own and returns each graph's launch on s, and closeAll, which closes
// them all once their launches are done (on an error the graphs captured
// before it are closed here).
func captureEach(dev device.Device, s device.Stream, iters int, runs []func() error) (launches []func() error, closeAll func() error, err error) {
	g, ok := dev.(device.Grapher)
	if !ok {
		return nil, nil, fmt.Errorf("benchmarks: capture: the %s backend has no graphs: %w", dev.Info().Backend, device.ErrNotSupported)
	}
	var graphs []device.Graph
	closeAll = func() error {
		var errs []error
		for _, graph := range graphs {
			errs = append(errs, graph.Close())
		}
		return errors.Join(errs...)
	}
	for _, run := range runs {
		graph, err := capture(g, s, iters, run)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		graphs = append(graphs, graph)
		launches = append(launches, func() error { return graph.Launch(s) })
	}
	return launches, closeAll, nil
}

// capture records iters calls of run on s into a graph.
func capture(g device.Grapher, s device.Stream, iters int, run func() error) (device.Graph, error) {
	if err := g.BeginCapture(s); err != nil {
		return nil, err
	}
	for i := 0; i < iters; i++ {
		if err := run(); err != nil {
			if graph, endErr := g.EndCapture(s); endErr == nil {
				err = errors.Join(err, graph.Close())
			}
			return nil, err
		}
	}
	return g.EndCapture(s)
}

// printRowEnd prints the measured columns of row, after the size columns
// printed when its measurement began.
func printRowEnd(p Printer, row BenchRow, ws int) {
	speedup := "-"
	if row.NCCLTime > 0 {
		speedup = fmt.Sprintf("%.2fx", row.NCCLTime.Seconds()/row.Time.Seconds())
	}
	maxErr := "-"
	if row.Checked {
		maxErr = fmt.Sprintf("%.3g", row.MaxErr)
	}
	nccl := fmt.Sprintf(" %10s %8s %8s", "-", "-", "-")
	spread := fmt.Sprintf("[%.1f..%.1f]", us(row.TimeMin), us(row.TimeMax))
	if row.NCCLTime > 0 {
		nccl = fmt.Sprintf(" %10.1f %8.1f %8.1f", us(row.NCCLTime), row.AlgBW(row.NCCLTime), row.BusBW(row.NCCLTime, ws))
		spread += fmt.Sprintf(" nccl [%.1f..%.1f]", us(row.NCCLMin), us(row.NCCLMax))
	}
	p.Printf(" %10.1f %8.1f %8.1f%s %7s %9s  %s\n",
		us(row.Time), row.AlgBW(row.Time), row.BusBW(row.Time, ws), nccl, speedup, maxErr, spread)
}

// defaultIters is the number of timed calls per measurement of size bytes:
// on GPUs about 8 GiB moved (10 to 200 calls); on the CPU backend, where a
// 64 MiB call takes a few hundred ms, about 32 MiB (3 to 20 calls), so that
// the default sweep takes seconds, not minutes.
func defaultIters(bytes int64, gpu bool) int {
	if gpu {
		return int(min(max(int64(8<<30)/bytes, 10), 200))
	}
	return int(min(max(int64(32<<20)/bytes, 3), 20))
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// timeCalls runs iters calls between two events and returns the mean. The
// ranks start together: a barrier, then one untimed call, whose end on the
// stream waits for every rank, before the first event; without them a rank
// still busy with the last check (its host compares outputs) would make the
// others' first timed calls wait for it.
func timeCalls(ctx context.Context, r world.Rank, s device.Stream, t0, t1 device.Event, iters int, run func() error) (time.Duration, error) {
	if err := r.Comm.Barrier(ctx); err != nil {
		return 0, err
	}
	if err := run(); err != nil {
		return 0, err
	}
	if err := t0.Record(s); err != nil {
		return 0, err
	}
	for i := 0; i < iters; i++ {
		if err := run(); err != nil {
			return 0, err
		}
	}
	if err := t1.Record(s); err != nil {
		return 0, err
	}
	if err := s.Synchronize(ctx); err != nil {
		return 0, err
	}
	d, err := t1.Since(t0)
	return d / time.Duration(iters), err
}

// mostOverRanks returns, element by element, the largest of vs over the
// ranks (collective): of durations, the slowest rank's; of non-negative
// float64s, which order as their bits, the largest.
func mostOverRanks(ctx context.Context, r world.Rank, vs []uint64) ([]uint64, error) {
	all, err := gatherOverRanks(ctx, r, vs)
	if err != nil {
		return nil, err
	}
	return largest(all), nil
}

// largest is the element-by-element largest of the ranks' vectors.
func largest(all [][]uint64) []uint64 {
	out := slices.Clone(all[0])
	for _, x := range all[1:] {
		for i := range out {
			out[i] = max(out[i], x[i])
		}
	}
	return out
}

// gatherOverRanks returns every rank's vs, in rank order (collective; every
// rank sends as many values).
func gatherOverRanks(ctx context.Context, r world.Rank, vs []uint64) ([][]uint64, error) {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	all, err := r.Comm.AllGather(ctx, b)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(all))
	for k, x := range all {
		if len(x) != len(b) {
			return nil, fmt.Errorf("benchmarks: rank %d sent %d bytes of results, want %d", k, len(x), len(b))
		}
		out[k] = make([]uint64, len(vs))
		for i := range vs {
			out[k][i] = binary.LittleEndian.Uint64(x[8*i:])
		}
	}
	return out, nil
}

// fillRandom fills the whole input with random values: a 16 MiB random tile
// uploaded once and repeated (fresh per process, never zeros).
func fillRandom(r world.Rank, buf *buffers, m, n int, dt dtype.DType) error {
	total := int64(m) * int64(n) * int64(dt.Size())
	tile := min(total, 16<<20) / int64(dt.Size())
	rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(r.Comm.Rank())))
	data := check.Random(rng, dt, int(tile))
	for off := int64(0); off < total; off += int64(len(data)) {
		chunk := data[:min(int64(len(data)), total-off)]
		if err := r.Dev.CopyToDevice(buf.in.Add(off), chunk); err != nil {
			return err
		}
	}
	return nil
}

// compareOutputs compares hiercoll's output with NCCL's: int32 must be
// identical (it returns the number of differing elements); floats return
// the largest absolute difference, and fail beyond the bound both
// summations' roundings allow for inputs in [-1, 1].
func compareOutputs(r world.Rank, buf *buffers, rowsPer, n int, dt dtype.DType) (float64, error) {
	count := rowsPer * n
	a := make([]byte, count*dt.Size())
	b := make([]byte, len(a))
	if err := r.Dev.CopyToHost(a, buf.out); err != nil {
		return 0, err
	}
	if err := r.Dev.CopyToHost(b, buf.ref); err != nil {
		return 0, err
	}
	ws := r.Comm.Size()
	if dt == dtype.I32 {
		diff := 0
		for i := 0; i < count; i++ {
			if binary.LittleEndian.Uint32(a[4*i:]) != binary.LittleEndian.Uint32(b[4*i:]) {
				diff++
			}
		}
		if diff > 0 {
			return float64(diff), fmt.Errorf("benchmarks: rank %d: %d of %d int32 elements differ from NCCL's", r.Comm.Rank(), diff, count)
		}
		return 0, nil
	}
	bound := float64(2+ws) * dt.UnitRoundoff() * float64(ws) * 1.01
	worst := 0.0
	for i := 0; i < count; i++ {
		d := math.Abs(dt.Get(a, i) - dt.Get(b, i))
		if math.IsNaN(d) || d > bound {
			return d, fmt.Errorf("benchmarks: rank %d: element %d is %g, NCCL's is %g (bound %.3g)", r.Comm.Rank(), i, dt.Get(a, i), dt.Get(b, i), bound)
		}
		worst = max(worst, d)
	}
	return worst, nil
}

// WriteCSV writes the rows as CSV.
func WriteCSV(w io.Writer, rows []BenchRow, world int, dt dtype.DType) error {
	if _, err := fmt.Fprintln(w, "variant,bytes_per_rank,count,dtype,M,N,hiercoll_us,hiercoll_busbw_gbps,nccl_us,nccl_busbw_gbps,max_abs_diff_vs_nccl,"+
		"hiercoll_us_min,hiercoll_us_max,nccl_us_min,nccl_us_max,simulated"); err != nil {
		return err
	}
	for _, r := range rows {
		// NCCL's columns stay empty where NCCL did not run (or was not compared).
		ncclUS, ncclBW, diff, ncclMin, ncclMax := "", "", "", "", ""
		if r.NCCLTime > 0 {
			ncclUS, ncclBW = fmt.Sprintf("%.2f", us(r.NCCLTime)), fmt.Sprintf("%.2f", r.BusBW(r.NCCLTime, world))
			ncclMin, ncclMax = fmt.Sprintf("%.2f", us(r.NCCLMin)), fmt.Sprintf("%.2f", us(r.NCCLMax))
		}
		if r.Checked {
			diff = fmt.Sprintf("%g", r.MaxErr)
		}
		if _, err := fmt.Fprintf(w, "%s,%d,%d,%v,%d,%d,%.2f,%.2f,%s,%s,%s,%.2f,%.2f,%s,%s,%v\n", r.Variant, r.Bytes, r.Count, dt, r.M, r.N,
			us(r.Time), r.BusBW(r.Time, world), ncclUS, ncclBW, diff, us(r.TimeMin), us(r.TimeMax), ncclMin, ncclMax, r.Simulated); err != nil {
			return err
		}
	}
	return nil
}
