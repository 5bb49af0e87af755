package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// runBenchMM is `hiercoll bench-mm`: hiercoll's own GEMM against the
// device's matmul (cuBLAS) on one GPU, in turn within each round.
func runBenchMM(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench-mm", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{})
	dt := fs.String("dtype", "bf16", "element type: bf16 or fp16")
	shapes := fs.String("shapes", "", "local MxNxK shapes, comma-separated (default: the local GEMMs of bench-gemm's shapes on 2 and 4 GPUs)")
	layouts := fs.String("layouts", "kn,nk", "layouts of B: kn ([K, N] row-major), nk ([N, K] row-major, a torch Linear weight)")
	rounds := fs.Int("rounds", 3, "rounds (at least 3); each times --iters calls of every path, interleaved call by call")
	iters := fs.Int("iters", 0, "calls per timing (0: 20 on GPUs, 1 on the CPU)")
	segments := fs.Int("segments", 4, "signal segments per destination of the signalled variant (4 destinations)")
	if err := parseFlags(fs, args, false, append(w.positive(), "rounds", "iters", "segments")...); err != nil {
		return err
	}
	d, err := parseDType("dtype", *dt, dtype.BF16, dtype.F16)
	if err != nil {
		return err
	}
	var list []benchmarks.MMShape
	if *shapes != "" {
		gs, err := benchmarks.ParseGemmShapes(*shapes)
		if err != nil {
			return usageError{err}
		}
		for _, g := range gs {
			list = append(list, benchmarks.MMShape{M: g.M, N: g.N, K: g.K})
		}
	}
	var ls []gemm.BLayout
	for _, name := range strings.Split(*layouts, ",") {
		switch strings.TrimSpace(name) {
		case "kn":
			ls = append(ls, gemm.BKN)
		case "nk":
			ls = append(ls, gemm.BNK)
		default:
			return usageError{fmt.Errorf("--layouts %q: want kn, nk or both", *layouts)}
		}
	}
	w.nodes, w.gpus = 1, 1 // one GPU
	return runWorld(ctx, &w, anyWorld, func(wh where) benchmarks.Job {
		return benchmarks.MM(benchmarks.MMOptions{
			Shapes: list, DType: d, Layouts: ls, Rounds: *rounds, Iters: *iters, Segments: *segments,
			Out: benchmarks.Printer{W: cmdOut}, Status: benchmarks.Printer{W: cmdErr},
		})
	})
}
