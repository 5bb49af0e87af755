package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/launch"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// worldFlags choose where a collective command runs, with what settings.
type worldFlags struct {
	backend string
	nodes   int
	gpus    int
	timeout time.Duration

	reductionSMs string
	railLanes    string
	chunks       string
	engines      string
	transport    string
	maxSymm      string
	ringSlots    int
	ringChannels int
	ringChunk    string
	graphs       string
	oneShot      string
	ringFrom     string
	cePull       string
	ceChunk      string
}

// worldUse says which of the world flags a command takes: every command
// takes --backend and --timeout; a flag a command would ignore is not
// registered, so that giving it is a mistake instead of a silent no-op.
type worldUse struct {
	shape  bool // --nodes, --gpus
	rail   bool // --transport and the tuning the reduce-scatter's stages take (--reduction-sms, --chunks, --rail-lanes)
	engine bool // --engine, --graphs, --max-symm and the ring's tuning (an rs2d.Config's)
	lists  bool // the tuning flags take comma-separated lists, each combination measured
	// registered: the command can read a registered input (bench
	// --register), so it takes --ce-pull
	registered bool
}

// register defines the world flags use names on fs, with their defaults
// set on w whether registered or not.
func (w *worldFlags) register(fs *flag.FlagSet, use worldUse) {
	w.backend, w.timeout = "auto", 2*time.Minute
	w.engines, w.transport, w.graphs = "auto", "auto", "off"
	w.reductionSMs, w.chunks, w.railLanes, w.maxSymm, w.ringChunk, w.oneShot, w.ringFrom, w.cePull, w.ceChunk = "0", "0", "0", "0", "0", "0", "0", "0", "0"
	list := ""
	if use.lists {
		list = "; a comma-separated list measures each value"
	}
	fs.StringVar(&w.backend, "backend", w.backend, "auto (GPUs if present, else CPU), cuda, or sim (CPU)")
	fs.Var(durationValue{&w.timeout}, "timeout", "bound on every wait, a `duration` with its unit: 30s, 2m")
	if use.shape {
		fs.IntVar(&w.nodes, "nodes", 0, "nodes (emulated on one host); default 2 on the CPU backend, 1 on GPUs")
		fs.IntVar(&w.gpus, "gpus", 0, "GPUs per node; default 4 on the CPU backend, every GPU on GPUs")
	}
	if use.rail {
		fs.StringVar(&w.transport, "transport", w.transport, "inter-node transport: auto, ipc, nccl, nvshmem (nccl and nvshmem need GPUs)")
		fs.StringVar(&w.reductionSMs, "reduction-sms", w.reductionSMs, "tuning: SMs for the intra-node reduce, or the pull engine's whole step (0: default)"+list)
		fs.StringVar(&w.chunks, "chunks", w.chunks, "tuning: chunks per node step (0: by size)"+list)
		fs.StringVar(&w.railLanes, "rail-lanes", w.railLanes, "tuning, NCCL transport: communicators per rail (0: default)"+list)
	}
	if use.engine {
		fs.StringVar(&w.engines, "engine", w.engines, "intra-node engine: auto, sm, copy, pull, ring, or nvls (NVLink multicast: GPUs only, and only with HIERCOLL_ALLOW_MULTICAST=1)"+list)
		fs.StringVar(&w.graphs, "graphs", w.graphs, "signal protocol: off (values grow with each call), on (calls can be captured in CUDA graphs: rs2d.Config.Graphs)"+list)
		fs.StringVar(&w.maxSymm, "max-symm", w.maxSymm, "bound on each rank's buffer memory, with K/M/G suffixes (0: none); above it auto takes the pull engine in rounds where they fit, else the ring")
		fs.IntVar(&w.ringSlots, "ring-slots", 0, "tuning, ring: FIFO slots per channel and node peer (0: default)")
		fs.IntVar(&w.ringChannels, "ring-channels", 0, "tuning, ring: channels, one thread block each (0: default)")
		fs.StringVar(&w.ringChunk, "ring-chunk", w.ringChunk, "tuning, ring: bytes per slot, with K/M suffixes (0: default, shrunk to fit --max-symm)")
		fs.StringVar(&w.ringFrom, "ring-from", w.ringFrom, "tuning, pull engine on one node of more than 2 GPUs: the smallest block (bytes of one destination's rows) that goes around a ring of SM stores (shaped by --ring-channels, --ring-slots, --ring-chunk), with K/M/G suffixes (0: default, 8M; off: never)"+list)
		fs.StringVar(&w.oneShot, "one-shot", w.oneShot, "tuning, pull engine: the largest block (bytes of one destination's rows) pushed in one shot, with K/M suffixes (0: default, 2M / GPUs per node; off: every call pulled)"+list)
	}
	if use.engine && use.registered {
		fs.StringVar(&w.cePull, "ce-pull", w.cePull, "tuning, pull engine with a registered or symmetric (zero-copy) input: the smallest block (bytes of one destination's rows) that the copy engine pulls, with K/M/G suffixes (0: default, 256M on one node of 2 GPUs, off elsewhere; off: never)"+list)
		fs.StringVar(&w.ceChunk, "ce-chunk", w.ceChunk, "tuning, the copy engine's pulls: bytes of each landing slot and copy, with K/M suffixes (0: by size, a quarter of the block, 64M to 128M)"+list)
	}
}

// durationValue is a duration flag whose error, for a number without a
// unit, says which unit was likely meant.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*v.d = d
		return nil
	}
	if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
		return fmt.Errorf("a duration needs its unit: %ss for %s seconds (or ms, m, h)", s, s)
	}
	return errors.New("want a duration with its unit, such as 30s, 2m or 500ms")
}

// positive names the world flags that must be positive when given.
func (w *worldFlags) positive() []string { return []string{"nodes", "gpus", "timeout"} }

// setting is the one variant of a command that runs a single setting: a
// context's Config, tuning included. A list where one value is wanted is a
// usage error.
func (w *worldFlags) setting() (rs2d.Config, error) {
	for _, f := range []struct{ name, value string }{
		{"engine", w.engines}, {"graphs", w.graphs}, {"reduction-sms", w.reductionSMs}, {"chunks", w.chunks}, {"rail-lanes", w.railLanes},
		{"one-shot", w.oneShot}, {"ring-from", w.ringFrom}, {"ce-pull", w.cePull}, {"ce-chunk", w.ceChunk},
	} {
		if strings.Contains(f.value, ",") {
			return rs2d.Config{}, usageError{fmt.Errorf("--%s %s: this command runs one setting; give one value (bench measures lists)", f.name, f.value)}
		}
	}
	vs, err := w.variants()
	if err != nil {
		return rs2d.Config{}, err
	}
	return vs[0].Config, nil
}

// variants is every combination of the list-valued flags.
func (w *worldFlags) variants() ([]benchmarks.Variant, error) {
	kind, err := internode.ParseKind(w.transport)
	if err != nil {
		return nil, usageError{err}
	}
	var errs []error
	ints := func(name, value string) []int {
		v, err := intList(name, value)
		errs = append(errs, err)
		return v
	}
	sms := ints("reduction-sms", w.reductionSMs)
	chunks := ints("chunks", w.chunks)
	lanes := ints("rail-lanes", w.railLanes)
	var engines []rs2d.Engine
	for _, name := range strings.Split(w.engines, ",") {
		e, err := rs2d.ParseEngine(strings.TrimSpace(name))
		errs = append(errs, err)
		engines = append(engines, e)
	}
	maxSymm, err := sizeOrZero("max-symm", w.maxSymm)
	errs = append(errs, err)
	ringChunk, err := sizeOrZero("ring-chunk", w.ringChunk)
	errs = append(errs, err)
	sizesOrOff := func(name, value string) []int64 {
		var out []int64
		for _, v := range strings.Split(value, ",") {
			n := int64(-1) // off
			if v = strings.TrimSpace(v); v != "off" {
				n, err = sizeOrZero(name, v)
				errs = append(errs, err)
			}
			out = append(out, n)
		}
		return out
	}
	oneShots, ringFroms, cePulls := sizesOrOff("one-shot", w.oneShot), sizesOrOff("ring-from", w.ringFrom), sizesOrOff("ce-pull", w.cePull)
	var ceChunks []int64
	for _, v := range strings.Split(w.ceChunk, ",") {
		n, err := sizeOrZero("ce-chunk", strings.TrimSpace(v))
		errs = append(errs, err)
		ceChunks = append(ceChunks, n)
	}
	if w.ringSlots < 0 || w.ringChannels < 0 {
		errs = append(errs, fmt.Errorf("--ring-slots %d, --ring-channels %d: want non-negative counts", w.ringSlots, w.ringChannels))
	}
	var graphs []bool
	for _, name := range strings.Split(w.graphs, ",") {
		switch strings.TrimSpace(name) {
		case "off":
			graphs = append(graphs, false)
		case "on":
			graphs = append(graphs, true)
		default:
			errs = append(errs, fmt.Errorf("--graphs %q: want off, on or both separated by commas", w.graphs))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, usageError{err}
	}
	// Every combination, the engine varying slowest.
	out := []benchmarks.Variant{{
		Config: rs2d.Config{Transport: kind, Timeout: w.timeout, MaxSymmetricBytes: maxSymm,
			Tuning: rs2d.Tuning{RingSlots: w.ringSlots, RingChannels: w.ringChannels, RingChunkBytes: ringChunk}},
	}}
	vary := func(n int, set func(v *benchmarks.Variant, i int)) {
		var next []benchmarks.Variant
		for _, v := range out {
			for i := 0; i < n; i++ {
				x := v
				set(&x, i)
				next = append(next, x)
			}
		}
		out = next
	}
	vary(len(engines), func(v *benchmarks.Variant, i int) { v.Config.Engine = engines[i] })
	vary(len(chunks), func(v *benchmarks.Variant, i int) { v.Config.Tuning.Chunks = chunks[i] })
	vary(len(sms), func(v *benchmarks.Variant, i int) { v.Config.Tuning.ReductionSMs = sms[i] })
	vary(len(lanes), func(v *benchmarks.Variant, i int) { v.Config.Tuning.RailLanes = lanes[i] })
	vary(len(oneShots), func(v *benchmarks.Variant, i int) { v.Config.Tuning.OneShotBytes = oneShots[i] })
	vary(len(ringFroms), func(v *benchmarks.Variant, i int) { v.Config.Tuning.RingFromBytes = ringFroms[i] })
	vary(len(cePulls), func(v *benchmarks.Variant, i int) { v.Config.Tuning.CopyEnginePullBytes = cePulls[i] })
	vary(len(ceChunks), func(v *benchmarks.Variant, i int) { v.Config.Tuning.CopyEnginePullChunk = ceChunks[i] })
	vary(len(graphs), func(v *benchmarks.Variant, i int) { v.Config.Graphs = graphs[i] })
	return out, nil
}

// sizeOrZero reads one size with an optional K, M or G suffix, or 0.
func sizeOrZero(name, s string) (int64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	v, err := parseSizes(s)
	if err != nil || len(v) != 1 {
		return 0, fmt.Errorf("--%s %q: want one size such as 64M or 1G, or 0", name, s)
	}
	return v[0], nil
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--%s %q: want non-negative integers separated by commas", name, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// maxSimGPUs bounds the simulated world: each simulated GPU is goroutines,
// buffers and connections in this process, and a world of thousands is
// gigabytes of memory for nothing a smaller one would not show.
const maxSimGPUs = 256

// where describes the world the job runs on, for reports.
type where struct {
	title string
	rank  int // this process's first rank (0 in-process)
}

// runWorld runs job on every rank this process owns: its own rank in a
// multi-process job; else it launches one process per GPU; else an
// in-process simulated world. check is given the world size before any of
// that starts (a command's flags that depend on it: --m divisible by the
// world; nil: none). It returns the job's error.
func runWorld(ctx context.Context, w *worldFlags, check func(world int) error, job func(where) benchmarks.Job) error {
	if check == nil {
		check = func(int) error { return nil }
	}
	switch w.backend {
	case "auto", "cuda", "sim":
	default:
		return usageError{fmt.Errorf("--backend %s: want auto, cuda or sim", w.backend)}
	}
	if bootstrap.EnvPresent() {
		return joinJob(ctx, w, check, job)
	}
	gpus := world.GPUs()
	switch {
	case w.backend == "cuda" && gpus == 0:
		return errors.New("--backend cuda: no GPU visible to the CUDA driver (try hiercoll doctor)")
	case w.backend != "sim" && gpus > 0:
		nodes := max(w.nodes, 1)
		per := w.gpus
		if per == 0 {
			per = gpus / nodes
		}
		if per <= 0 {
			return usageError{fmt.Errorf("--nodes %d: %d GPU(s) cannot be split into %d nodes", nodes, gpus, nodes)}
		}
		if err := check(nodes * per); err != nil {
			return err
		}
		return relaunch(ctx, nodes, per)
	}
	nodes, per := w.nodes, w.gpus
	if nodes == 0 {
		nodes = 2
	}
	if per == 0 {
		per = 4
	}
	if kind, err := internode.ParseKind(w.transport); err == nil && (kind == internode.NCCL || kind == internode.NVSHMEM) {
		return usageError{fmt.Errorf("--transport %s needs GPUs (the CUDA backend); the simulated GPUs take ipc (or auto)", kind)}
	}
	if nodes > maxSimGPUs/per {
		return usageError{fmt.Errorf("--nodes %d x --gpus %d: the CPU backend simulates at most %d GPUs in one process", nodes, per, maxSimGPUs)}
	}
	if err := check(nodes * per); err != nil {
		return err
	}
	shape := bootstrap.Shape{Nodes: nodes, LocalSize: per}
	wd, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: w.timeout}})
	if err != nil {
		return usageError{err}
	}
	defer wd.Close()
	ctx, cancel := context.WithTimeout(ctx, 4*w.timeout)
	defer cancel()
	title := fmt.Sprintf("%d node(s) x %d simulated GPU(s) (CPU backend, in-process)", nodes, per)
	return wd.Run(ctx, job(where{title: title}))
}

// joinJob runs job as this process's rank of a launched job (RANK and
// WORLD_SIZE set, by torchrun or hiercoll launch), on its GPU.
func joinJob(ctx context.Context, w *worldFlags, check func(world int) error, job func(where) benchmarks.Job) error {
	const alone = "run the command without the launcher: it then simulates --nodes x --gpus GPUs in one process"
	switch {
	case w.backend == "sim":
		return usageError{fmt.Errorf("--backend sim cannot join a launched job (RANK and WORLD_SIZE are set): simulated GPUs live inside one process; %s", alone)}
	case world.GPUs() == 0:
		return usageError{fmt.Errorf("a launched job (RANK and WORLD_SIZE are set) runs one rank per GPU, and no GPU is visible to the CUDA driver here; %s", alone)}
	}
	size, err := strconv.Atoi(os.Getenv(bootstrap.EnvWorldSize))
	if err != nil || size <= 0 {
		return usageError{fmt.Errorf("%s=%q: want a positive number", bootstrap.EnvWorldSize, os.Getenv(bootstrap.EnvWorldSize))}
	}
	if err := check(size); err != nil {
		return err
	}
	wd, err := world.Process(ctx)
	if err != nil {
		return err
	}
	defer wd.Close()
	dev := wd.Ranks[0].Dev.Info()
	title := fmt.Sprintf("%d node(s) x %d GPU(s) (%s, CUDA backend, one process per GPU)", wd.Shape.Nodes, wd.Shape.LocalSize, dev.Model)
	return wd.Run(ctx, job(where{title: title, rank: wd.Ranks[0].Comm.Rank()}))
}

// anyWorld is the check of commands whose flags fit every world size.
func anyWorld(int) error { return nil }

// relaunch starts this command once per GPU, nodes × per processes.
func relaunch(ctx context.Context, nodes, per int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "hiercoll: launching %d processes (%d node(s) x %d GPU(s))\n", nodes*per, nodes, per)
	return launch.Run(ctx, launch.Spec{
		NProc:   nodes * per,
		Nodes:   nodes,
		Command: append([]string{exe}, os.Args[1:]...),
		// Only rank 0 prints the report (or JSON lines): as it is.
		RawStdout: true,
	})
}
