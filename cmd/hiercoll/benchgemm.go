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

// runBenchGemm is `hiercoll bench-gemm`: the row-parallel linear layer's
// GEMM + ReduceScatter2D, overlapped and not, beside GEMM + NCCL, as a
// table (and CSV).
func runBenchGemm(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench-gemm", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{shape: true, rail: true})
	dt := fs.String("dtype", "bf16", "element type of A, B and C: bf16, fp16 or fp32")
	shapes := fs.String("shapes", "", "MxNxK shapes, comma-separated, K split over the ranks "+
		"(default 8192x8192x28672,8192x8192x8192,4096x8192x28672 on GPUs; tiny ones on the CPU)")
	mode := fs.String("mode", "auto", "the path Run takes: auto, overlap or sequential (both are timed either way)")
	split := fs.String("split-first", "auto", "tuning, overlapped path: compute the first block in two halves so the copy engine starts sooner: "+
		"auto (when K/world < "+strconv.Itoa(gemmrs.SplitAutoMaxKLocal)+" on one node), on or off")
	gemm := fs.String("gemm", "auto", "the GEMM: own (hiercoll's, per-segment signals), cublas (the device's matmul, block by block), "+
		"or auto (own where every rank can run it and measured it at least as fast as cuBLAS)")
	segments := fs.Int("segments", 0, "tuning, own GEMM: signals per destination's rows (0: about one per 1024 rows, at most 8)")
	input := fs.String("input", "", "the operands' dtype when not --dtype's: e4m3 (fp8 into --dtype bf16 or fp16; B as [N, K/world], unit scales)")
	scaling := fs.String("scaling", "tensor", "with --input e4m3: the scales, tensor (unit per-tensor scales), row (per row of A and of B) or block "+
		"(per 1x128 block of A and 128x128 block of B), the row and block ones powers of two from 2^-2 to 2^2")
	pushShare := fs.Int("push-share", 0, "tuning, own GEMM on one node: percent of the last peer's block the SMs push after the GEMM, beside the copy engine (0: estimated, -1: none)")
	iters := fs.Int("iters", 0, "calls per timed measurement (0: 20 on GPUs, 2 on the CPU)")
	reps := fs.Int("reps", 3, "measurements of each path, in turn; the median is reported with the spread")
	samples := fs.Int("samples", 0, "output elements per rank checked against the exact sum (0: 64 on GPUs, all of small outputs)")
	csvPath := fs.String("csv", "", "write the table as CSV to this file")
	jsonOut := fs.Bool("json", false, jsonHelp)
	if err := parseFlags(fs, args, false, append(w.positive(), "iters", "reps", "samples")...); err != nil {
		return err
	}
	d, err := parseDType("dtype", *dt, dtype.BF16, dtype.F16, dtype.F32)
	if err != nil {
		return err
	}
	var in dtype.DType
	if *input != "" {
		if in, err = parseDType("input", *input, dtype.E4M3); err != nil {
			return err
		}
	}
	sc, err := owngemm.ParseScaling(*scaling)
	if err != nil {
		return usageError{err}
	}
	if sc != owngemm.PerTensor && in != dtype.E4M3 {
		return usageError{fmt.Errorf("--scaling %v: scales are for --input e4m3", sc)}
	}
	m, err := gemmrs.ParseMode(*mode)
	if err != nil {
		return usageError{err}
	}
	sp, err := gemmrs.ParseSplit(*split)
	if err != nil {
		return usageError{err}
	}
	gm, err := gemmrs.ParseGemm(*gemm)
	if err != nil {
		return usageError{err}
	}
	if *segments < 0 || *segments > rs2d.MaxSegments {
		return usageError{fmt.Errorf("--segments %d: want 0 to %d", *segments, rs2d.MaxSegments)}
	}
	var list []benchmarks.GemmShape
	if *shapes != "" {
		if list, err = benchmarks.ParseGemmShapes(*shapes); err != nil {
			return usageError{err}
		}
	}
	cfg, err := w.setting()
	if err != nil {
		return err
	}
	if *pushShare < -1 || *pushShare > 100 {
		return usageError{fmt.Errorf("--push-share %d: want -1 (none), 0 (estimated) or a percentage", *pushShare)}
	}
	tuning := gemmrs.Tuning{ReduceScatter: cfg.Tuning, SplitFirstBlock: sp, Gemm: gm, Help: *pushShare}
	tuning.ReduceScatter.Segments = *segments
	check := func(world int) error {
		for _, sh := range list {
			if sh.M%world != 0 || sh.K%world != 0 {
				return usageError{fmt.Errorf("--shapes %s: %dx%dx%d: M and K must be multiples of the world size %d", *shapes, sh.M, sh.N, sh.K, world)}
			}
		}
		return nil
	}
	return runWorld(ctx, &w, check, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error {
			var rows []benchmarks.GemmRow
			opts := benchmarks.GemmOptions{
				Shapes: list, DType: d, Config: gemmrs.Config{Mode: m, Input: in, Transport: cfg.Transport, Timeout: cfg.Timeout, Tuning: tuning},
				Scaling: sc,
				Iters:   *iters, Reps: *reps, Samples: *samples,
				Out: benchmarks.Printer{W: reportTo(*jsonOut)}, Status: cmdErr, Title: wh.title, Rows: &rows,
			}
			if err := benchmarks.GemmBench(opts)(ctx, r); err != nil {
				return err
			}
			if r.Comm.Rank() != 0 {
				return nil
			}
			if *jsonOut {
				if err := benchmarks.WriteGemmJSON(cmdOut, rows, r.Comm.Size(), d); err != nil {
					return err
				}
			}
			if *csvPath == "" {
				return nil
			}
			f, err := os.Create(*csvPath)
			if err != nil {
				return err
			}
			return errors.Join(benchmarks.WriteGemmCSV(f, rows, r.Comm.Size(), d), f.Close())
		}
	})
}
