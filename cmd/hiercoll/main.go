// Command hiercoll runs, checks and measures ReduceScatter2D.
//
//	hiercoll demo      one checked ReduceScatter2D with a short report
//	hiercoll verify    a correctness sweep against the fp64 reference (and NCCL on GPUs)
//	hiercoll bench     bus bandwidth beside NCCL's, as a table, CSV and PNG
//	hiercoll bench-gemm  GEMM + reduce-scatter, overlapped against GEMM then NCCL (also: bench --gemm)
//	hiercoll doctor    GPUs, links and the capabilities the library relies on
//	hiercoll launch    start a multi-process job: launch --nproc N [--nodes K] -- cmd args...
//	hiercoll model     predicted ReduceScatter2D and NCCL ring times past one host (latency-bandwidth model)
//
// The collective commands run where they can: under torchrun or `hiercoll
// launch` (RANK and WORLD_SIZE set) each process is one rank on its GPU;
// otherwise, with GPUs present, the command launches itself once per GPU;
// without GPUs it runs an in-process world of simulated GPUs on the CPU.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: hiercoll <command> [flags]

commands:
  demo     run ReduceScatter2D once, check it against the fp64 reference and report
           (on the GPUs when there are any, else on a simulated 2 nodes x 4 GPUs)
  verify   correctness sweep: every dtype, odd N, M_per_rank 1, many calls in a row
  bench    bus bandwidth of hiercoll beside NCCL (table, CSV, PNG)
  bench-gemm  GEMM + reduce-scatter: overlapped vs GEMM then NCCL/hiercoll, in one run
           (also spelled "bench --gemm")
  bench-mm hiercoll's own GEMM against cuBLAS on one GPU (TFLOP/s, both layouts of B)
  doctor   GPUs, NVLink/P2P, driver attributes, NVRTC and NCCL versions
  floors   bandwidth and latency of the primitives (copy engine, SM copies, reduce, signals)
  launch   launch --nproc N [--nodes K] -- command args...   (torchrun-style)
  model    predicted ReduceScatter2D against NCCL's ring on 2-128 nodes (table, CSV, PNG; --validate)

run "hiercoll <command> -h" for the command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "demo":
		err = runDemo(ctx, args)
	case "verify":
		err = runVerify(ctx, args)
	case "bench":
		if rest, gemm := gemmFlag(args); gemm {
			err = runBenchGemm(ctx, rest)
		} else {
			err = runBench(ctx, args)
		}
	case "bench-gemm":
		err = runBenchGemm(ctx, args)
	case "bench-mm":
		err = runBenchMM(ctx, args)
	case "doctor":
		err = runDoctor(ctx, args)
	case "floors":
		err = runFloors(ctx, args)
	case "launch":
		err = runLaunch(ctx, args)
	case "model":
		err = runModel(ctx, args)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "hiercoll: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "hiercoll %s: %v\n", os.Args[1], err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "hiercoll %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// gemmFlag takes --gemm (or -gemm, --gemm=true) out of bench's arguments:
// "bench --gemm" is bench-gemm. Arguments after "--" are left alone.
func gemmFlag(args []string) (rest []string, gemm bool) {
	for i, a := range args {
		switch a {
		case "--":
			return append(rest, args[i:]...), gemm
		case "--gemm", "-gemm", "--gemm=true", "-gemm=true":
			gemm = true
		case "--gemm=false", "-gemm=false":
			gemm = false
		default:
			rest = append(rest, a)
		}
	}
	return rest, gemm
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ error }
