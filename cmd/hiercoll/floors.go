package main

import (
	"context"
	"flag"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/benchmarks/floors"
)

func runFloors(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floors", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{shape: true})
	bytes := fs.Int64("bytes", 0, "bytes per transfer (default 512 MiB on GPUs, 16 MiB on the CPU, 16 KiB on the CPU beside a GEMM)")
	iters := fs.Int("iters", 0, "timed iterations per measurement (default 10; 2 on the CPU beside a GEMM)")
	gemm := fs.Bool("beside-gemm", false, "also measure the copy engine beside a bf16 GEMM (row blocks of --bytes, N=8192, K=2048; slow on the CPU)")
	if err := parseFlags(fs, args, false, append(w.positive(), "bytes", "iters")...); err != nil {
		return err
	}
	return runWorld(ctx, &w, anyWorld, func(wh where) benchmarks.Job {
		return floors.Job(floors.Options{Bytes: *bytes, Iters: *iters, BesideGemm: *gemm, Out: benchmarks.Printer{W: cmdOut}, Title: wh.title})
	})
}
