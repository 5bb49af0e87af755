package benchmarks

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// HostCostOptions are the settings of the host-cost job.
type HostCostOptions struct {
	Variants []Variant
	Batch    int // enqueue-only calls timed together (0: 20)
	Rounds   int // batches; the median is reported (0: 50)
	Out      Printer
}

// HostCost returns the job that measures the host time of one
// ReduceScatter2D call in Go: the time rs2d.Context.ReduceScatter takes to
// check its arguments and enqueue the call, on a tiny input (one row per
// rank, 8 bf16 columns), the device drained between batches so that no
// queue fills. It is the floor under the C ABI's and Python's cost
// (benchmarks/torch/host_cost.py measures those on the same machine).
func HostCost(o HostCostOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return hostCost(ctx, r, o) }
}

func hostCost(ctx context.Context, r world.Rank, o HostCostOptions) (err error) {
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	batch, rounds := max(o.Batch, 1), max(o.Rounds, 1)
	if o.Batch == 0 {
		batch = 20
	}
	if o.Rounds == 0 {
		rounds = 50
	}
	ws, n, dt := r.Comm.Size(), 8, dtype.BF16
	buf, err := allocBuffers(r.Dev, ws, n, ws, dt, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, buf.free()) }()
	s, err := r.Dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	in := rs2d.Tensor{Ptr: buf.in, Rows: ws, Cols: n, DType: dt}
	out := rs2d.Tensor{Ptr: buf.out, Rows: 1, Cols: n, DType: dt}
	p.Printf("hiercoll host cost: rs2d.Context.ReduceScatter's host time per call (enqueue only), %d ranks, [%d, %d] %v; median of %s of %s\n",
		ws, ws, n, dt, Count(rounds, "batch"), Count(batch, "call"))
	variants := o.Variants
	if len(variants) == 0 {
		variants = []Variant{{}}
	}
	for _, v := range variants {
		cfg := v.Config
		cfg.MaxM, cfg.N, cfg.DType = ws, n, dt
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		per, err := timeEnqueue(ctx, rs, in, out, s, batch, rounds)
		err = errors.Join(err, rs.Close())
		if err != nil {
			return err
		}
		p.Printf("  %-24s %7.2f us per call (min %.2f, max %.2f)\n", v.Name(r.Dev.Info().SMs),
			us(per[len(per)/2]), us(per[0]), us(per[len(per)-1]))
	}
	return nil
}

// timeEnqueue times rounds batches of batch calls, each batch after a
// drained stream, and returns the per-call times sorted.
func timeEnqueue(ctx context.Context, rs *rs2d.Context, in, out rs2d.Tensor, s device.Stream, batch, rounds int) ([]time.Duration, error) {
	var per []time.Duration
	for round := -1; round < rounds; round++ { // round -1 warms up
		if err := s.Synchronize(ctx); err != nil {
			return nil, err
		}
		start := time.Now()
		for i := 0; i < batch; i++ {
			if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
				return nil, err
			}
		}
		if round >= 0 {
			per = append(per, time.Since(start)/time.Duration(batch))
		}
	}
	slices.Sort(per)
	return per, s.Synchronize(ctx)
}
