package main

import (
	"context"
	"flag"
	"os"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/benchmarks/floors"
)

func runFloors(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floors", flag.ContinueOnError)
	var w worldFlags
	w.register(fs)
	bytes := fs.Int64("bytes", 0, "bytes per transfer (default 512 MiB on GPUs, 16 MiB on the CPU)")
	iters := fs.Int("iters", 10, "timed iterations per measurement")
	gemm := fs.Bool("beside-gemm", false, "also measure the copy engine beside a bf16 GEMM (row blocks of --bytes, N=8192, K=2048)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return runWorld(ctx, &w, func(wh where) benchmarks.Job {
		return floors.Job(floors.Options{Bytes: *bytes, Iters: *iters, BesideGemm: *gemm, Out: benchmarks.Printer{W: os.Stdout}, Title: wh.title})
	})
}
