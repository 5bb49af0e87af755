package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
	owngemm "github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// benchGemmFlags are the values of `hiercoll bench-gemm`'s flags.
type benchGemmFlags struct {
	fs                                                     *flag.FlagSet
	w                                                      worldFlags
	dt, shapes, mode, split, gemm, input, scaling, csvPath *string
	graphs, sumOwn                                         *string
	segments, pushShare, iters, reps, samples              *int
	jsonOut, capture                                       *bool
}

// newBenchGemmFlags defines `hiercoll bench-gemm`'s flags.
func newBenchGemmFlags() *benchGemmFlags {
	fs := flag.NewFlagSet("bench-gemm", flag.ContinueOnError)
	f := &benchGemmFlags{fs: fs}
	f.w.register(fs, worldUse{shape: true, rail: true})
	f.dt = fs.String("dtype", "bf16", "element type of A, B and C: bf16, fp16 or fp32")
	f.shapes = fs.String("shapes", "", "MxNxK shapes, comma-separated, K split over the ranks "+
		"(default 8192x8192x28672,8192x8192x8192,4096x8192x28672 on GPUs; tiny ones on the CPU)")
	f.mode = fs.String("mode", "auto", "the path Run takes: auto, overlap or sequential (both are timed either way)")
	f.split = fs.String("split-first", "auto", "tuning, overlapped path: compute the first block in two halves so the copy engine starts sooner: "+
		"auto (when K/world < "+strconv.Itoa(gemmrs.SplitAutoMaxKLocal)+" on one node), on or off")
	f.sumOwn = fs.String("sum-own", "auto", "tuning, own GEMM on one node of three or more ranks: sum the own block in the GEMM instead of a reduce pass after it: "+
		"auto (when K/world >= "+strconv.Itoa(gemmrs.SumAutoMinKLocal)+" and M/world >= "+strconv.Itoa(gemmrs.SumAutoMinRows)+"), on or off")
	f.gemm = fs.String("gemm", "auto", "the GEMM: own (hiercoll's, per-segment signals), cublas (the device's matmul, block by block), "+
		"or auto (own where every rank can run it and measured it at least as fast as cuBLAS)")
	f.segments = fs.Int("segments", 0, "tuning, own GEMM: signals per destination's rows (0: about one per 1024 rows, at most 8)")
	f.input = fs.String("input", "", "the operands' dtype when not --dtype's: e4m3 (fp8 into --dtype bf16 or fp16; B as [N, K/world], unit scales)")
	f.scaling = fs.String("scaling", "tensor", "with --input e4m3: the scales, tensor (unit per-tensor scales), row (per row of A and of B) or block "+
		"(per 1x128 block of A and 128x128 block of B), the row and block ones powers of two from 2^-2 to 2^2")
	f.pushShare = fs.Int("push-share", 0, "tuning, own GEMM on one node: percent of the last peer's block the SMs push after the GEMM, beside the copy engine (0: estimated, -1: none)")
	f.iters = fs.Int("iters", 0, "calls per timed measurement (0: 20 on GPUs, 2 on the CPU)")
	f.reps = fs.Int("reps", 3, "rounds, each timing every path interleaved call by call; the median of the rounds is reported with the spread")
	f.samples = fs.Int("samples", 0, "output elements per rank checked against the exact sum (0: 64 on GPUs, all of small outputs)")
	f.graphs = fs.String("graphs", "off", "signal protocol: off (values grow with each call), on (replayable: calls can be captured in CUDA graphs, gemmrs.Config.Graphs)")
	f.capture = fs.Bool("capture", false, "time CUDA-graph launches (device time without the host's enqueue, as in a captured training step): "+
		"each path's call captured once, each timed call one launch; needs --graphs on")
	f.csvPath = fs.String("csv", "", "write the table as CSV to this file")
	f.jsonOut = fs.Bool("json", false, jsonHelp)
	return f
}

// options parses args and checks the flags, returning the benchmark's
// options less its output, status, title and rows.
func (f *benchGemmFlags) options(args []string) (benchmarks.GemmOptions, error) {
	var none benchmarks.GemmOptions
	if err := parseFlags(f.fs, args, false, append(f.w.positive(), "iters", "reps", "samples")...); err != nil {
		return none, err
	}
	d, err := parseDType("dtype", *f.dt, dtype.BF16, dtype.F16, dtype.F32)
	if err != nil {
		return none, err
	}
	var in dtype.DType
	if *f.input != "" {
		if in, err = parseDType("input", *f.input, dtype.E4M3); err != nil {
			return none, err
		}
	}
	sc, err := owngemm.ParseScaling(*f.scaling)
	if err != nil {
		return none, usageError{err}
	}
	if sc != owngemm.PerTensor && in != dtype.E4M3 {
		return none, usageError{fmt.Errorf("--scaling %v: scales are for --input e4m3", sc)}
	}
	m, err := gemmrs.ParseMode(*f.mode)
	if err != nil {
		return none, usageError{err}
	}
	sp, err := gemmrs.ParseSplit(*f.split)
	if err != nil {
		return none, usageError{err}
	}
	gm, err := gemmrs.ParseGemm(*f.gemm)
	if err != nil {
		return none, usageError{err}
	}
	if *f.segments < 0 || *f.segments > rs2d.MaxSegments {
		return none, usageError{fmt.Errorf("--segments %d: want 0 to %d", *f.segments, rs2d.MaxSegments)}
	}
	var list []benchmarks.GemmShape
	if *f.shapes != "" {
		if list, err = benchmarks.ParseGemmShapes(*f.shapes); err != nil {
			return none, usageError{err}
		}
	}
	cfg, err := f.w.setting()
	if err != nil {
		return none, err
	}
	graphs := false
	switch *f.graphs {
	case "off":
	case "on":
		graphs = true
	default:
		return none, usageError{fmt.Errorf("--graphs %q: want off or on", *f.graphs)}
	}
	if *f.capture && !graphs {
		return none, usageError{errors.New("--capture replays the calls in CUDA graphs, which needs the graph-replayable signals: add --graphs on")}
	}
	if *f.pushShare < -1 || *f.pushShare > 100 {
		return none, usageError{fmt.Errorf("--push-share %d: want -1 (none), 0 (estimated) or a percentage", *f.pushShare)}
	}
	so, err := gemmrs.ParseSplit(*f.sumOwn)
	if err != nil {
		return none, usageError{fmt.Errorf("--sum-own: %w", err)}
	}
	tuning := gemmrs.Tuning{ReduceScatter: cfg.Tuning, SplitFirstBlock: sp, SumOwnBlock: so, Gemm: gm, Help: *f.pushShare}
	tuning.ReduceScatter.Segments = *f.segments
	return benchmarks.GemmOptions{
		Shapes: list, DType: d,
		Config:  gemmrs.Config{Mode: m, Input: in, Transport: cfg.Transport, Timeout: cfg.Timeout, Graphs: graphs, Tuning: tuning},
		Scaling: sc, Capture: *f.capture,
		Iters: *f.iters, Reps: *f.reps, Samples: *f.samples,
	}, nil
}

// runBenchGemm is `hiercoll bench-gemm`: the row-parallel linear layer's
// GEMM + ReduceScatter2D, overlapped and not, beside GEMM + NCCL, as a
// table (and CSV).
func runBenchGemm(ctx context.Context, args []string) error {
	f := newBenchGemmFlags()
	base, err := f.options(args)
	if err != nil {
		return err
	}
	check := func(world int) error {
		for _, sh := range base.Shapes {
			if sh.M%world != 0 || sh.K%world != 0 {
				return usageError{fmt.Errorf("--shapes %s: %dx%dx%d: M and K must be multiples of the world size %d", *f.shapes, sh.M, sh.N, sh.K, world)}
			}
		}
		return nil
	}
	return runWorld(ctx, &f.w, check, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error { return f.job(ctx, r, base, wh.title) }
	})
}

// job runs the benchmark on rank r and, on rank 0, writes the JSON and CSV asked for.
func (f *benchGemmFlags) job(ctx context.Context, r worldRank, base benchmarks.GemmOptions, title string) error {
	var rows []benchmarks.GemmRow
	opts := base
	opts.Out, opts.Status, opts.Title, opts.Rows = benchmarks.Printer{W: reportTo(*f.jsonOut)}, cmdErr, title, &rows
	if err := benchmarks.GemmBench(opts)(ctx, r); err != nil {
		return err
	}
	if r.Comm.Rank() != 0 {
		return nil
	}
	d := opts.DType
	if *f.jsonOut {
		if err := benchmarks.WriteGemmJSON(cmdOut, rows, r.Comm.Size(), d); err != nil {
			return err
		}
	}
	if *f.csvPath == "" {
		return nil
	}
	file, err := os.Create(*f.csvPath)
	if err != nil {
		return err
	}
	return errors.Join(benchmarks.WriteGemmCSV(file, rows, r.Comm.Size(), d), file.Close())
}
