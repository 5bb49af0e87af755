package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
)

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{shape: true, rail: true, engine: true})
	m := fs.Int("m", 0, "rows M of each rank's input, a multiple of the world size (default: 1024 per rank on the CPU, 8192 per GPU)")
	n := fs.Int("n", 0, "columns N (default 1024 on the CPU, 8192 on GPUs)")
	dt := fs.String("dtype", "bf16", "element type: bf16, fp16, fp32, int32")
	calls := fs.Int("calls", 5, "timed calls after the checked one")
	if err := parseFlags(fs, args, false, append(w.positive(), "m", "n", "calls")...); err != nil {
		return err
	}
	d, err := parseDType("dtype", *dt, dtype.All...)
	if err != nil {
		return err
	}
	cfg, err := w.setting()
	if err != nil {
		return err
	}
	check := func(world int) error {
		if *m%world != 0 {
			return usageError{fmt.Errorf("--m %d is not a multiple of the world size %d (every rank gets M/world rows)", *m, world)}
		}
		return nil
	}
	return runWorld(ctx, &w, check, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error {
			opts := benchmarks.DemoOptions{
				M: *m, N: *n, DType: d, Calls: *calls, Config: cfg,
				Out: benchmarks.Printer{W: cmdOut}, Title: wh.title, Status: cmdErr,
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
