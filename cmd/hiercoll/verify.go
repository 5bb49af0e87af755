package main

import (
	"context"
	"encoding/json"
	"flag"
	"strings"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
)

func runVerify(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var w worldFlags
	w.register(fs, worldUse{shape: true, rail: true, engine: true, registered: true})
	dts := fs.String("dtypes", "bf16,fp16,fp32,int32", "element types to check")
	calls := fs.Int("calls", 3, "calls per shape, each on fresh random data")
	repeat := fs.Int("repeat", 0, "calls in a row on one context (default: 1000 on GPUs, 100 on the CPU)")
	register := fs.Bool("register", false, "the pull engine reads the caller's buffer in place, registered once per context (Context.Register; default: copied into its symmetric input)")
	jsonOut := fs.Bool("json", false, "print each check's result as a JSON object on stdout, one per line (the report goes to stderr)")
	inputOffset := fs.Int("input-offset", 0, "each shape's input this many bytes, 0 to 15, past a 16-byte aligned base, as a view into a larger tensor")
	if err := parseFlags(fs, args, false, append(w.positive(), "calls", "repeat")...); err != nil {
		return err
	}
	var list []dtype.DType
	for _, s := range strings.Split(*dts, ",") {
		d, err := parseDType("dtypes", s, dtype.All...)
		if err != nil {
			return err
		}
		list = append(list, d)
	}
	cfg, err := w.setting()
	if err != nil {
		return err
	}
	return runWorld(ctx, &w, anyWorld, func(wh where) benchmarks.Job {
		return func(ctx context.Context, r worldRank) error {
			gpu := r.Dev.Info().Backend == "cuda"
			rep := *repeat
			if rep == 0 {
				rep = pick(gpu, 1000, 100)
			}
			o := benchmarks.VerifyOptions{
				DTypes: list, Cases: benchmarks.DefaultCases(gpu), Calls: *calls, Repeat: rep,
				Config: cfg, Register: *register, InputOffset: int64(*inputOffset), Out: benchmarks.Printer{W: reportTo(*jsonOut)}, Title: wh.title,
			}
			if *jsonOut {
				enc := json.NewEncoder(cmdOut)
				o.Result = func(v benchmarks.VerifyResult) { _ = enc.Encode(v) }
			}
			return benchmarks.Verify(o)(ctx, r)
		}
	})
}
