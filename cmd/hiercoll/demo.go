package main

import (
	"context"
	"flag"
	"os"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
)

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var w worldFlags
	w.register(fs)
	m := fs.Int("m", 0, "rows M of each rank's input (default: 1024 per rank on the CPU, 8192 per GPU)")
	n := fs.Int("n", 0, "columns N (default 1024 on the CPU, 8192 on GPUs)")
	dt := fs.String("dtype", "bf16", "element type: bf16, fp16, fp32, int32")
	calls := fs.Int("calls", 5, "timed calls after the checked one")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	d, err := dtype.Parse(*dt)
	if err != nil {
		return usageError{err}
	}
	ctx, cfg, err := w.setting(ctx)
	if err != nil {
		return err
	}
	return runWorld(ctx, &w, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error {
			opts := benchmarks.DemoOptions{
				M: *m, N: *n, DType: d, Calls: *calls, Config: cfg,
				Out: benchmarks.Printer{W: os.Stdout}, Title: wh.title,
			}
			gpu := r.Dev.Info().Backend == "cuda"
			if opts.N == 0 {
				opts.N = pick(gpu, 8192, 1024)
			}
			if opts.M == 0 {
				opts.M = pick(gpu, 8192, 1024) * r.Comm.Size()
			}
			return benchmarks.Demo(opts, nil)(ctx, r)
		}
	})
}

func pick(cond bool, a, b int) int {
	if cond {
		return a
	}
	return b
}
