package benchmarks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	es := int64(o.DType.Size())
	p.Printf("hiercoll demo: ReduceScatter2D over %s\n", o.Title)
	p.Printf("  input per rank  [%d, %d] %v (%s); output per rank [%d, %d]; %d chunk(s) per node step; transport between nodes: %s\n",
		o.M, o.N, o.DType, FormatBytes(int64(o.M)*int64(o.N)*es), plan.RowsPerRank, o.N, plan.Chunks, rs.Transport())
	p.Printf("  buffers         %v\n", rs.Memory())

	// One checked call on fresh random data, with the output poisoned first.
	seed, err := agreeSeed(ctx, r)
	if err != nil {
		return err
	}
	in := Inputs{Seed: seed, DType: o.DType, World: ws, RowsPer: plan.RowsPerRank, Cols: o.N}
	if err := r.Dev.CopyToDevice(buf.in, in.Rank(r.Comm.Rank())); err != nil {
		return err
	}
	if err := r.Dev.CopyToDevice(buf.out, check.Poison(o.DType, plan.RowsPerRank*o.N)); err != nil {
		return err
	}
	if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
		return err
	}
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	firstStages, err := rs.LastStages()
	if err != nil {
		return err
	}
	got := make([]byte, buf.outBytes())
	if err := r.Dev.CopyToHost(got, buf.out); err != nil {
		return err
	}
	rep := in.Expected(r.Comm.Rank()).Compare(got, rs.Roundings())

	// Timed calls (the first call above paid for kernel compilation).
	var calls []rs2d.Stages
	for i := 0; i < o.Calls; i++ {
		if err := rs.ReduceScatter(ctx, buf.inTensor(), buf.outTensor(), s); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		st, err := rs.LastStages()
		if err != nil {
			return err
		}
		calls = append(calls, st)
	}
	if o.Calls == 0 {
		calls = []rs2d.Stages{firstStages}
	}
	// The median call, whose stage ends are reported beside its time.
	slices.SortFunc(calls, func(a, b rs2d.Stages) int { return cmp.Compare(a.Total, b.Total) })
	stages := calls[len(calls)/2]

	verdict := "ok  " + rep.String()
	if !rep.OK() {
		verdict = "FAIL " + rep.String()
	}
	all, err := r.Comm.AllGather(ctx, []byte(verdict))
	if err != nil {
		return err
	}
	p.Printf("  time per call   %v (the median of %d calls, rank 0, measured on the device)\n", stages.Total.Round(time.Microsecond), len(calls))
	p.Printf("  stage ends      scatter %v, intra-node reduce %v, inter-node %v, final %v (that call's stages, from its start: final is its time)\n",
		stages.Scatter.Round(time.Microsecond), stages.IntraReduce.Round(time.Microsecond),
		stages.InterNode.Round(time.Microsecond), stages.Total.Round(time.Microsecond))
	ratio := "no inter-node traffic"
	if plan.InterNodeBytes > 0 {
		ratio = fmt.Sprintf("%.1fx less", float64(plan.FlatRingBytes)/float64(plan.InterNodeBytes))
	}
	p.Printf("  bytes per rank  inside the node %s, between nodes %s; a flat ring would send %s between ranks (%s)\n",
		FormatBytes(plan.IntraNodeBytes), FormatBytes(plan.InterNodeBytes), FormatBytes(plan.FlatRingBytes), ratio)
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
