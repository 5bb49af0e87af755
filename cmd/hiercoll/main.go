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
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/dtype"
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

run "hiercoll <command> -h" (or "hiercoll help <command>") for the command's flags;
"hiercoll --version" for the version.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := cpuProfile()
	code := run(ctx, os.Args[1], os.Args[2:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// cpuProfile starts a CPU profile of this process into the file
// HIERCOLL_CPUPROFILE names (suffixed with the rank under a launcher), for
// finding where host time goes; it returns the function that ends it.
func cpuProfile() func() {
	path := os.Getenv("HIERCOLL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	if rank := os.Getenv("RANK"); rank != "" {
		path += ".rank" + rank
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hiercoll: HIERCOLL_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// commands are the subcommands, by name.
var commands = map[string]func(context.Context, []string) error{
	"demo":   runDemo,
	"verify": runVerify,
	"bench": func(ctx context.Context, args []string) error {
		if rest, gemm := gemmFlag(args); gemm {
			return runBenchGemm(ctx, rest)
		}
		return runBench(ctx, args)
	},
	"bench-gemm": runBenchGemm,
	"bench-mm":   runBenchMM,
	"doctor":     runDoctor,
	"floors":     runFloors,
	"launch":     runLaunch,
	"model":      runModel,
}

// run runs command cmd and returns the exit status: 0, 1 for a failure, 2
// for a mistake on the command line. The error is printed once: under a
// launcher (RANK and WORLD_SIZE set) a usage error, the same on every rank, by rank 0. The
// other ranks wait for the launcher to stop them (ctx ends) before they
// exit, so that rank 0 fails first: a launcher names the first rank that
// failed and stops the rest, and were another rank first, rank 0 could be
// stopped before it printed. A rank that is not stopped within usageWait
// prints the mistake itself.
func run(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	cmdOut, cmdErr = stdout, stderr
	switch cmd {
	case "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "help":
		if len(args) == 0 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		cmd, args = args[0], []string{"-h"}
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	fn, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "hiercoll: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	err := fn(ctx, args)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		if bootstrap.EnvPresent() && os.Getenv(bootstrap.EnvRank) != "0" && stoppedWithin(ctx, usageWait) {
			return 2 // the launcher stopped this rank once rank 0 had reported the mistake
		}
		fmt.Fprintf(stderr, "hiercoll %s: %v\n", cmd, ue.error)
		return 2
	}
	fmt.Fprintf(stderr, "hiercoll %s: %v\n", cmd, err)
	return 1
}

// usageWait is how long a rank other than 0 waits to be stopped after a
// usage error; tests shorten it.
var usageWait = 30 * time.Second

// stoppedWithin reports whether ctx ends within d, else false after d.
func stoppedWithin(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
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

// parseDType parses the value s of flag (--dtype, --dtypes) as a dtype the
// command takes (one of allowed); a dtype it does not take is a usage error
// that says which it does, and where fp8 is measured.
func parseDType(flag, s string, allowed ...dtype.DType) (dtype.DType, error) {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = a.String()
	}
	d, err := dtype.Parse(s)
	if err != nil { // dtype's own message lists every element type, not the command's
		return d, usageError{fmt.Errorf("--%s %q: unknown element type; this command takes %s", flag, s, strings.Join(names, ", "))}
	}
	if !slices.Contains(allowed, d) {
		hint := ""
		if d == dtype.E4M3 {
			hint = " (fp8 is a GEMM input only: benchmarks/torch/gemm_fp8.py measures it)"
		}
		return d, usageError{fmt.Errorf("--%s %s: this command takes %s%s", flag, d, strings.Join(names, ", "), hint)}
	}
	return d, nil
}
