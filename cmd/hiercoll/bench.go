package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/internal/plot"
	"github.com/seed12530e24/hiercoll/internal/sizes"
)

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{shape: true, rail: true, engine: true, lists: true, registered: true})
	dt := fs.String("dtype", "bf16", "element type: bf16, fp16, fp32, int32")
	n := fs.Int("n", 4096, "columns N (M follows from the size)")
	sizes := fs.String("sizes", "", "input bytes per rank, comma-separated, with K/M/G suffixes, each at least one row per rank "+
		"(rounded down to whole rows per rank; default 1M..2G on GPUs, 1M..64M on the CPU)")
	iters := fs.Int("iters", 0, "timed calls per measurement (default by size: about 8 GiB moved on GPUs, 32 MiB on the CPU)")
	reps := fs.Int("reps", 3, "measurements per size, hiercoll and NCCL in turn; the median is reported with the spread")
	csvPath := fs.String("csv", "", "write the table as CSV to this file")
	pngPath := fs.String("png", "", "write a plot of bus bandwidth against size to this PNG file")
	jsonOut := fs.Bool("json", false, jsonHelp)
	copyIn := fs.Bool("copy-in", false, "the pull engine reads the caller's buffer, copied into its symmetric input by each call (default: rows put there once, zero copy)")
	trace := fs.Bool("trace", false, "after each size, one more call traced: rank 0's stage times (the call's end; in rounds under --max-symm, each round's end)")
	register := fs.Bool("register", false, "the pull engine reads the caller's plain buffer in place, registered once before timing (Context.Register; default: rows put into its symmetric input once, zero copy)")
	capture := fs.Bool("capture", false, "time CUDA-graph launches of the calls, hiercoll's and NCCL's alike (device time without the host's enqueue, "+
		"as in a captured training step): --iters calls captured once per size, one launch per measurement; needs --graphs on")
	inputOffset := fs.Int("input-offset", 0, "the caller's plain buffer (NCCL's input, and hiercoll's but with the pull engine's zero copy) this many bytes, 0 to 15, past a 16-byte aligned base, as a view into a larger tensor")
	hostCost := fs.Bool("host-cost", false, "instead of the sweep: the host time of one call in Go (enqueue only, tiny input), per variant; "+
		"--iters calls per batch (default 20), --reps batches (default 50)")
	if err := parseFlags(fs, args, false, append(w.positive(), "n", "iters", "reps")...); err != nil {
		return err
	}
	d, err := parseDType("dtype", *dt, dtype.All...)
	if err != nil {
		return err
	}
	var list []int64
	if *sizes != "" {
		if list, err = parseSizes(*sizes); err != nil {
			return usageError{err}
		}
	}
	if *register && *copyIn {
		return usageError{errors.New("--register and --copy-in are two ways to read the caller's buffer: pick one")}
	}
	if *capture && w.graphs != "on" {
		return usageError{errors.New("--capture replays the calls in CUDA graphs, which needs the graph-replayable signals: add --graphs on")}
	}
	variants, err := w.variants()
	if err != nil {
		return err
	}
	check := func(world int) error {
		if list == nil {
			return nil // the defaults fit any world
		}
		least := benchmarks.MinBenchSize(*n, d, world)
		for _, size := range list {
			if size < least {
				return usageError{fmt.Errorf("--sizes %s: %d bytes is less than one row per rank: with --n %d (%v) on %d ranks the smallest size is %d bytes (a smaller --n allows smaller sizes)",
					*sizes, size, *n, d, world, least)}
			}
		}
		return nil
	}
	report := reportTo(*jsonOut)
	if *hostCost {
		return runHostCost(ctx, fs, &w, variants, *iters, *reps, *jsonOut)
	}
	return runWorld(ctx, &w, check, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error {
			var rows []benchmarks.BenchRow
			opts := benchmarks.BenchOptions{
				Sizes: list, N: *n, DType: d, Iters: *iters, Reps: *reps, Variants: variants, CopyIn: *copyIn, Register: *register, Capture: *capture, Trace: *trace, InputOffset: int64(*inputOffset),
				Out: benchmarks.Printer{W: report}, Title: wh.title, Rows: &rows,
			}
			return benchRank(ctx, r, opts, *jsonOut, *csvPath, *pngPath)
		}
	})
}

// runHostCost is `hiercoll bench --host-cost`: the host time of one call
// per variant instead of the sweep.
func runHostCost(ctx context.Context, fs *flag.FlagSet, w *worldFlags, variants []benchmarks.Variant, iters, reps int, jsonOut bool) error {
	if jsonOut {
		return usageError{errors.New("--json goes with the sweep, not --host-cost")}
	}
	o := benchmarks.HostCostOptions{Variants: variants, Batch: iters, Out: benchmarks.Printer{W: cmdOut}}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "reps" {
			o.Rounds = reps
		}
	})
	return runWorld(ctx, w, nil, func(where) benchmarks.Job { return benchmarks.HostCost(o) })
}

// benchRank runs the sweep on rank r and, on rank 0, writes the JSON, CSV
// and PNG asked for.
func benchRank(ctx context.Context, r worldRank, opts benchmarks.BenchOptions, jsonOut bool, csvPath, pngPath string) error {
	if opts.Sizes == nil {
		opts.Sizes = benchmarks.DefaultSizes(r.Dev.Info().Backend == "cuda")
	}
	if err := benchmarks.Bench(opts)(ctx, r); err != nil {
		return err
	}
	if r.Comm.Rank() != 0 {
		return nil
	}
	if jsonOut {
		if err := benchmarks.WriteJSON(cmdOut, *opts.Rows, r.Comm.Size(), opts.DType); err != nil {
			return err
		}
	}
	return writeBenchFiles(*opts.Rows, r.Comm.Size(), opts.DType, csvPath, pngPath)
}

func writeBenchFiles(rows []benchmarks.BenchRow, world int, d dtype.DType, csvPath, pngPath string) error {
	var errs []error
	if csvPath != "" {
		f, err := os.Create(csvPath)
		if err == nil {
			err = errors.Join(benchmarks.WriteCSV(f, rows, world, d), f.Close())
		}
		errs = append(errs, err)
	}
	if pngPath != "" {
		chart := benchChart(rows, world, d)
		f, err := os.Create(filepath.Clean(pngPath))
		if err == nil {
			err = errors.Join(chart.PNG(f), f.Close())
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// benchChart is bus bandwidth against size, a line per variant and NCCL's
// beside the first; the title says when the GPUs were simulated.
func benchChart(rows []benchmarks.BenchRow, world int, d dtype.DType) plot.Chart {
	chart := plot.Chart{
		Title:  fmt.Sprintf("ReduceScatter2D %v bus bandwidth, %d ranks", d, world),
		XLabel: "input bytes per rank", YLabel: "bus bandwidth (GB/s)", LogX: true,
	}
	if len(rows) > 0 && rows[0].Simulated {
		chart.Title += " - SIMULATED GPUs (CPU backend), not GPU times"
	}
	nc := plot.Series{Name: "NCCL"}
	series := map[string]int{}
	for _, r := range rows {
		i, ok := series[r.Variant]
		if !ok {
			i = len(chart.Series)
			series[r.Variant] = i
			chart.Series = append(chart.Series, plot.Series{Name: "hiercoll " + r.Variant})
		}
		h := &chart.Series[i]
		h.X, h.Y = append(h.X, float64(r.Bytes)), append(h.Y, r.BusBW(r.Time, world))
		if r.NCCLTime > 0 && i == 0 {
			nc.X, nc.Y = append(nc.X, float64(r.Bytes)), append(nc.Y, r.BusBW(r.NCCLTime, world))
		}
	}
	if len(nc.X) > 0 {
		chart.Series = append(chart.Series, nc)
	}
	return chart
}

// parseSizes reads "1M,32M,2G". Each size is at most sizes.Max (1 PiB): a
// number whose product with its suffix would pass that is refused rather than
// wrapped around to 0, a small or a negative size.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, typed := range strings.Split(s, ",") {
		f := strings.TrimSpace(strings.ToUpper(typed))
		mult := int64(1)
		switch {
		case strings.HasSuffix(f, "K"):
			mult, f = 1<<10, strings.TrimSuffix(f, "K")
		case strings.HasSuffix(f, "M"):
			mult, f = 1<<20, strings.TrimSuffix(f, "M")
		case strings.HasSuffix(f, "G"):
			mult, f = 1<<30, strings.TrimSuffix(f, "G")
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("size %s: want a positive number with an optional K, M or G suffix", hcerr.Quote(strings.TrimSpace(typed)))
		}
		n, ok := sizes.Product(v, mult)
		if !ok {
			return nil, fmt.Errorf("size %s: more than 2^50 bytes (1 PiB)", hcerr.Quote(strings.TrimSpace(typed)))
		}
		out = append(out, n)
	}
	return out, nil
}
