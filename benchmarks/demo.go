package benchmarks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// DemoOptions configure the demo.
type DemoOptions struct {
	M, N   int
	DType  dtype.DType
	Calls  int // timed calls after the checked one
	Config rs2d.Config
	Out    Printer
	Title  string // what runs: "2 nodes × 4 simulated GPUs (CPU backend)"
	// Status, if set, gets a progress line per step on rank 0, with the
	// time since the demo started (a large demo on the CPU takes minutes).
	Status io.Writer
}

// DemoResult is what rank 0 learned.
type DemoResult struct {
	Pass bool
}

// Demo returns the demo job: one ReduceScatter2D checked against the fp64
// reference on every rank, then a few timed calls, and a short report.
func Demo(opts DemoOptions, result *DemoResult) Job {
	return func(ctx context.Context, r world.Rank) error {
		return demo(ctx, r, opts, result)
	}
}

func demo(ctx context.Context, r world.Rank, o DemoOptions, result *DemoResult) (err error) {
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	start := time.Now()
	progress := func(format string, args ...any) {
		Printer{W: o.Status, Rank: r.Comm.Rank()}.Printf("hiercoll demo: %s (%.1fs)\n", fmt.Sprintf(format, args...), time.Since(start).Seconds())
	}
	progress("setting up: [%d, %d] %v per rank, %d ranks", o.M, o.N, o.DType, r.Comm.Size())
	ws := r.Comm.Size()
	cfg := o.Config
	cfg.MaxM, cfg.N, cfg.DType = o.M, o.N, o.DType
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rs.Close()) }()
	if err := rs.Trace(true); err != nil {
		return err
	}
	buf, err := allocBuffers(r.Dev, o.M, o.N, ws, o.DType, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, buf.free()) }()
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	plan := rs.PlanFor(o.M)
	printDemoHeader(p, r, o, rs, plan)
	rep, firstStages, err := demoCheckedCall(ctx, r, o, rs, buf, s, plan, progress)
	if err != nil {
		return err
	}
	calls, err := demoTimedCalls(ctx, o, rs, buf, s, firstStages, progress)
	if err != nil {
		return err
	}
	return demoReport(ctx, r, p, plan, rep, calls, result)
}

// printDemoHeader prints what the demo runs: shapes, chunks, transport and buffers.
func printDemoHeader(p Printer, r world.Rank, o DemoOptions, rs *rs2d.Context, plan rs2d.Plan) {
	es := int64(o.DType.Size())
	p.Printf("hiercoll demo: ReduceScatter2D over %s\n", o.Title)
	p.Printf("  input per rank  [%d, %d] %v (%s); output per rank [%d, %d]; %d chunk(s) per node step; transport between nodes: %s\n",
		o.M, o.N, o.DType, FormatBytes(int64(o.M)*int64(o.N)*es), plan.RowsPerRank, o.N, plan.Chunks, rs.Transport())
	p.Printf("  buffers         %v\n", rs.Memory())
	if r.Dev.Info().Backend != "cuda" {
		p.Printf("  simulated       the CPU backend runs Go code in place of GPU kernels: the times below are of this CPU, not of a GPU\n")
	}
}

// demoCheckedCall runs one call on fresh random data, with the output
// poisoned first, and compares its output with the fp64 reference.
func demoCheckedCall(ctx context.Context, r world.Rank, o DemoOptions, rs *rs2d.Context, buf *buffers, s device.Stream,
	plan rs2d.Plan, progress func(string, ...any)) (check.Report, rs2d.Stages, error) {
	seed, err := agreeSeed(ctx, r)
	if err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	in := Inputs{Seed: seed, DType: o.DType, World: r.Comm.Size(), RowsPer: plan.RowsPerRank, Cols: o.N}
	if err := r.Dev.CopyToDevice(buf.in, in.Rank(r.Comm.Rank())); err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	if err := r.Dev.CopyToDevice(buf.out, check.Poison(o.DType, plan.RowsPerRank*o.N)); err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	progress("checked call: running")
	if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	if err := s.Synchronize(ctx); err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	firstStages, err := rs.LastStages()
	if err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	got := make([]byte, buf.outBytes())
	if err := r.Dev.CopyToHost(got, buf.out); err != nil {
		return check.Report{}, rs2d.Stages{}, err
	}
	return in.Expected(r.Comm.Rank()).Compare(got, rs.Roundings()), firstStages, nil
}

// demoTimedCalls runs the timed calls (the checked call paid for kernel
// compilation) and returns their stages sorted by time; with none, the
// checked call's.
func demoTimedCalls(ctx context.Context, o DemoOptions, rs *rs2d.Context, buf *buffers, s device.Stream,
	firstStages rs2d.Stages, progress func(string, ...any)) ([]rs2d.Stages, error) {
	var calls []rs2d.Stages
	for i := 0; i < o.Calls; i++ {
		progress("timed call %d of %d", i+1, o.Calls)
		if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
			return nil, err
		}
		if err := s.Synchronize(ctx); err != nil {
			return nil, err
		}
		st, err := rs.LastStages()
		if err != nil {
			return nil, err
		}
		calls = append(calls, st)
	}
	if o.Calls == 0 {
		calls = []rs2d.Stages{firstStages}
	}
	slices.SortFunc(calls, func(a, b rs2d.Stages) int { return cmp.Compare(a.Total, b.Total) })
	return calls, nil
}

// demoReport gathers every rank's verdict and prints the median call's
// time and stages, the bytes sent and the verdicts, then PASS or FAIL.
func demoReport(ctx context.Context, r world.Rank, p Printer, plan rs2d.Plan, rep check.Report,
	calls []rs2d.Stages, result *DemoResult) error {
	ws := r.Comm.Size()
	// The median call, whose stage ends are reported beside its time.
	stages := calls[len(calls)/2]

	verdict := "ok  " + rep.String()
	if !rep.OK() {
		verdict = "FAIL " + rep.String()
	}
	all, err := r.Comm.AllGather(ctx, []byte(verdict))
	if err != nil {
		return err
	}
	p.Printf("  time per call   %v (the median of %s, rank 0, measured on the device)\n", stages.Total.Round(time.Microsecond), Count(len(calls), "call"))
	p.Printf("  stage ends      scatter %v, intra-node reduce %v, inter-node %v, final %v (that call's stages, from its start: final is its time)\n",
		stages.Scatter.Round(time.Microsecond), stages.IntraReduce.Round(time.Microsecond),
		stages.InterNode.Round(time.Microsecond), stages.Total.Round(time.Microsecond))
	p.Printf("  bytes sent      per rank: %s to its node peers, %s to its rail peers on other nodes\n",
		FormatBytes(plan.IntraNodeBytes), FormatBytes(plan.InterNodeBytes))
	if line := networkBytes(plan, ws); line != "" {
		p.Printf("  across nodes    %s\n", line)
	}
	pass := true
	var lines []string
	for q, v := range all {
		if !strings.HasPrefix(string(v), "ok") {
			pass = false
		}
		lines = append(lines, fmt.Sprintf("    rank %d: %s", q, v))
	}
	p.Printf("  check vs fp64 reference (fresh random inputs, output poisoned first):\n%s\n", strings.Join(lines, "\n"))
	if pass {
		p.Printf("PASS\n")
	} else {
		p.Printf("FAIL\n")
	}
	if result != nil && r.Comm.Rank() == 0 {
		result.Pass = pass
	}
	if !pass {
		return fmt.Errorf("benchmarks: demo: results differ from the reference")
	}
	return nil
}

// networkBytes compares, per node, what crosses between nodes: each of the
// node's ranks sends nnodes-1 blocks to its rail peers, where a flat ring
// reduce-scatter over all ranks in node order sends world-1 blocks across
// each node boundary (from the node's last rank to the next node's first).
// "" on one node.
func networkBytes(plan rs2d.Plan, world int) string {
	if plan.InterNodeBytes == 0 || plan.FlatRingBytes == 0 {
		return ""
	}
	block := plan.FlatRingBytes / int64(world-1)
	nodes := int(plan.InterNodeBytes/block) + 1
	local := world / nodes
	perNode := plan.InterNodeBytes * int64(local)
	return fmt.Sprintf("per node: hiercoll %s (%s x %s of %s), a flat ring %s (%s); the ring sends %.2fx hiercoll's",
		FormatBytes(perNode), Count(local, "rank"), Count(nodes-1, "block"), FormatBytes(block), FormatBytes(plan.FlatRingBytes), Count(world-1, "block"),
		float64(plan.FlatRingBytes)/float64(perNode))
}

// FormatBytes prints a byte count in B, KiB, MiB or GiB.
func FormatBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
