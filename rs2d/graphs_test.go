package rs2d_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// graphSpec is one replay test: a call captured once (after an eager
// call), replayed on fresh inputs with the output poisoned before each, an
// eager call made between replays every eagerEvery (0: never), and, with
// rejectEvery, a call rejected for bad arguments there too.
type graphSpec struct {
	shape       bootstrap.Shape
	cfg         rs2d.Config
	knobs       rs2d.Tuning
	rowsPer, n  int
	replays     int
	eagerEvery  int
	rejectEvery int
}

// runGraph runs spec on a simulated world.
func runGraph(t *testing.T, spec graphSpec) {
	t.Helper()
	w, err := world.Sim(spec.shape, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	require.NoError(t, graphRanks(t, w, spec, rand.Uint64()))
}

// graphRanks runs spec on the ranks of w (inputs drawn from seed, the same
// on every rank); every output is checked against the fp64 reference
// (int32: bit for bit).
func graphRanks(t *testing.T, w *world.World, spec graphSpec, seed uint64) error {
	ws := spec.shape.World()
	m, dt := spec.rowsPer*ws, dtype.I32
	cfg := spec.cfg
	cfg.MaxM, cfg.N, cfg.DType, cfg.Graphs, cfg.Timeout = m, spec.n, dt, true, 20*time.Second
	cfg.Tuning = spec.knobs
	in := &inputs{calls: map[int][][]byte{}, seed: seed, world: ws, dt: dt, count: m * spec.n}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		defer rs.Close()
		inT, outT, free := rankBuffers(t, r.Dev, m, spec.n, ws, dt)
		defer free()
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		// call enqueues one call on s: the GEMM signals first, with overlap.
		call := func() error {
			if cfg.OverlapWithGEMM {
				sig := rs.NextSignals()
				if sig.EarlyRows(m) > 0 {
					if err := sig.RaiseEarly(s, rs.ConsumptionOrder()[0]); err != nil {
						return err
					}
				}
				for _, dest := range rs.ConsumptionOrder() {
					if err := sig.Raise(s, dest); err != nil {
						return err
					}
				}
			}
			return rs.ReduceScatter(ctx, inT, outT, s)
		}
		got := make([]byte, spec.rowsPer*spec.n*dt.Size())
		n := 0 // calls so far (eager, replayed, captured and never run: its inputs are skipped)
		run := func(what string, enqueue func() error) error {
			all := in.get(n)
			if err := r.Dev.CopyToDevice(inT.Ptr, all[rank]); err != nil {
				return err
			}
			if err := r.Dev.CopyToDevice(outT.Ptr, check.Poison(dt, spec.rowsPer*spec.n)); err != nil {
				return err
			}
			if err := enqueue(); err != nil {
				return fmt.Errorf("%s %d: %w", what, n, err)
			}
			if err := s.Synchronize(ctx); err != nil {
				return fmt.Errorf("%s %d: %w", what, n, err)
			}
			if err := r.Dev.CopyToHost(got, outT.Ptr); err != nil {
				return err
			}
			if rep := check.ReduceScatter(dt, all, rank, spec.rowsPer, spec.n).Compare(got, rs2d.Roundings(spec.shape.Nodes)); !rep.OK() {
				return fmt.Errorf("%s %d: %v", what, n, rep)
			}
			n++
			return nil
		}
		if err := run("eager call", call); err != nil {
			return err
		}
		g := r.Dev.(device.Grapher)
		if err := g.BeginCapture(s); err != nil {
			return err
		}
		if err := call(); err != nil {
			return fmt.Errorf("capturing: %w", err)
		}
		graph, err := g.EndCapture(s)
		if err != nil {
			return err
		}
		defer graph.Close()
		n++ // the captured call did not run
		for i := 1; i <= spec.replays; i++ {
			if err := run("replay", func() error { return graph.Launch(s) }); err != nil {
				return err
			}
			if spec.rejectEvery > 0 && i%spec.rejectEvery == 0 {
				bad := outT
				bad.Rows++
				if err := rs.ReduceScatter(ctx, inT, bad, s); !errors.Is(err, device.ErrInvalidArgument) {
					return fmt.Errorf("a call with a bad output: %v, want it rejected", err)
				}
			}
			if spec.eagerEvery > 0 && i%spec.eagerEvery == 0 {
				if err := run("eager call", call); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// A call captured on a stream replays correctly on fresh inputs, 100 times
// on one node (the SM and copy engines, the copy engine beside GEMM
// signals captured with it, the ring, and the pull engine's ring for large
// calls), mixed with eager calls and rejected calls.
func TestGraphReplays(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   rs2d.Config
		knobs rs2d.Tuning
	}{
		{"sm", rs2d.Config{Engine: rs2d.EngineSM}, rs2d.Tuning{}},
		{"copy", rs2d.Config{Engine: rs2d.EngineCopy}, rs2d.Tuning{}},
		{"gemm", rs2d.Config{OverlapWithGEMM: true}, rs2d.Tuning{}},
		{"ring", rs2d.Config{Engine: rs2d.EngineRing}, rs2d.Tuning{RingChannels: 3, RingChunkBytes: 64}},
		// The pull engine's ring for large calls, from every block.
		{"pull-ring", rs2d.Config{Engine: rs2d.EnginePull}, rs2d.Tuning{RingFromBytes: 1, OneShotBytes: -1, RingChannels: 3, RingChunkBytes: 64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runGraph(t, graphSpec{shape: bootstrap.Shape{Nodes: 1, LocalSize: 4}, cfg: c.cfg, knobs: c.knobs, rowsPer: 3, n: 33,
				replays: 100, eagerEvery: 7, rejectEvery: 11})
		})
	}
}

// Every world shape, across nodes (the IPC rail's credits), with chunks
// (several arrivals per word in a call) and a split first block.
func TestGraphReplaysShapes(t *testing.T) {
	for _, shape := range shapes {
		for _, c := range []struct {
			name  string
			cfg   rs2d.Config
			knobs rs2d.Tuning
		}{
			{"sm", rs2d.Config{Engine: rs2d.EngineSM}, rs2d.Tuning{Chunks: 3}},
			{"copy", rs2d.Config{Engine: rs2d.EngineCopy}, rs2d.Tuning{Chunks: 3}},
			{"gemm-split", rs2d.Config{OverlapWithGEMM: true}, rs2d.Tuning{SplitFirstBlock: true}},
			{"ring", rs2d.Config{Engine: rs2d.EngineRing}, rs2d.Tuning{RingChannels: 2, RingChunkBytes: 16}},
		} {
			t.Run(fmt.Sprintf("%v/%s", shape, c.name), func(t *testing.T) {
				t.Parallel()
				runGraph(t, graphSpec{shape: shape, cfg: c.cfg, knobs: c.knobs, rowsPer: 4, n: 9, replays: 12, eagerEvery: 5})
			})
		}
	}
}

// A context made without Config.Graphs refuses a call on a stream being
// captured, before enqueueing anything, and keeps working afterwards.
func TestCaptureRefusedWithoutGraphs(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	ctx := testContext(t)
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 4, N: 8, DType: dtype.I32, Timeout: 10 * time.Second})
		if err != nil {
			return err
		}
		defer rs.Close()
		in, out, free := rankBuffers(t, r.Dev, 4, 8, 2, dtype.I32)
		defer free()
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		g := r.Dev.(device.Grapher)
		if err := g.BeginCapture(s); err != nil {
			return err
		}
		callErr := rs.ReduceScatter(ctx, in, out, s)
		graph, err := g.EndCapture(s)
		if err != nil {
			return err
		}
		defer graph.Close()
		if !errors.Is(callErr, device.ErrInvalidArgument) || !containsAll(callErr.Error(), "captured", "Config.Graphs") {
			return fmt.Errorf("a captured call on a context without Graphs: %v, want it refused", callErr)
		}
		if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
			return err
		}
		return s.Synchronize(ctx)
	})
	require.NoError(t, err)
}

// With Graphs, a producer that raised a call's GEMM signals and gave the
// call up clears them; the next call then waits for its own signals. The
// producer of the next call writes its rows only after a gate the test
// opens late: a signal left raised would let the scatter copy the old rows.
func TestGraphsClearedSignalsReleaseNothing(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	ctx := testContext(t)
	const m, n = 4, 8
	data := callInputs(dtype.I32, 2, 2, m*n)
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.I32, OverlapWithGEMM: true, Graphs: true, Timeout: 10 * time.Second})
		if err != nil {
			return err
		}
		defer rs.Close()
		in, out, free := rankBuffers(t, r.Dev, m, n, 2, dtype.I32)
		defer free()
		s, producer, done, err := callerAndProducer(r.Dev)
		if err != nil {
			return err
		}
		defer done()
		// The given-up call: rows written, signals raised, call skipped.
		if err := r.Dev.CopyToDevice(in.Ptr, data[0][rank]); err != nil {
			return err
		}
		call, err := rs.Prepare(in, out)
		if err != nil {
			return err
		}
		for _, dest := range rs.ConsumptionOrder() {
			if err := call.Signals().Raise(producer, dest); err != nil {
				return err
			}
		}
		call.Skip()
		if err := call.Signals().Clear(producer); err != nil {
			return err
		}
		if err := producer.Synchronize(ctx); err != nil {
			return err
		}
		// The next call: its rows land only once the gate opens.
		staged, err := r.Dev.Alloc(in.Bytes())
		if err != nil {
			return err
		}
		defer r.Dev.Free(staged)
		if err := r.Dev.CopyToDevice(staged, data[1][rank]); err != nil {
			return err
		}
		gate, err := r.Dev.Alloc(256)
		if err != nil {
			return err
		}
		defer r.Dev.Free(gate)
		if err := r.Dev.CopyToDevice(gate, make([]byte, 4)); err != nil {
			return err
		}
		next := rs.NextSignals()
		if err := r.Dev.WaitValue32(producer, device.Word{Addr: gate, Label: "test gate"}, device.GEQ, 1); err != nil {
			return err
		}
		if err := r.Dev.Copy(producer, in.Ptr, staged, in.Bytes()); err != nil {
			return err
		}
		for _, dest := range rs.ConsumptionOrder() {
			if err := next.Raise(producer, dest); err != nil {
				return err
			}
		}
		if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond) // a scatter released early would have copied by now
		opener, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer opener.Close()
		if err := r.Dev.WriteValue32(opener, gate, 1); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		got := make([]byte, out.Bytes())
		if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
			return err
		}
		if rep := check.ReduceScatter(dtype.I32, data[1], rank, m/2, n).Compare(got, 1); !rep.OK() {
			return fmt.Errorf("the call after a given-up one: %v", rep)
		}
		return nil
	})
	require.NoError(t, err)
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// opCounter passes everything on to its device and counts the stream work
// enqueued by kind.
type opCounter struct {
	device.Device
	mu  sync.Mutex
	ops map[string]int
}

func (o *opCounter) count(kind string) {
	o.mu.Lock()
	o.ops[kind]++
	o.mu.Unlock()
}

func (o *opCounter) Copy(s device.Stream, dst, src device.Ptr, n int64) error {
	o.count("copy")
	return o.Device.Copy(s, dst, src, n)
}

func (o *opCounter) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	o.count("launch")
	return o.Device.Launch(s, k, grid, args...)
}

func (o *opCounter) WaitValue32(s device.Stream, w device.Word, cmp device.Cmp, v uint32) error {
	o.count("wait")
	return o.Device.WaitValue32(s, w, cmp, v)
}

func (o *opCounter) WriteValue32(s device.Stream, addr device.Ptr, v uint32) error {
	o.count("write")
	return o.Device.WriteValue32(s, addr, v)
}

// A world of one rank: the call is one device-to-device copy of the input
// into the output and nothing else (with GEMM overlap, after the wait for
// its one signal, which Graphs then resets); the output is checked bit for
// bit over several calls.
func TestOneRankIsOneCopy(t *testing.T) {
	for _, c := range []struct {
		cfg  rs2d.Config
		want map[string]int
	}{
		{rs2d.Config{Engine: rs2d.EngineSM}, map[string]int{"copy": 1}},
		{rs2d.Config{Engine: rs2d.EngineCopy}, map[string]int{"copy": 1}},
		{rs2d.Config{OverlapWithGEMM: true}, map[string]int{"copy": 1, "wait": 1}},
		{rs2d.Config{OverlapWithGEMM: true, Graphs: true}, map[string]int{"copy": 1, "wait": 1, "write": 1}},
	} {
		t.Run(fmt.Sprintf("%v/overlap=%v/graphs=%v", c.cfg.Engine, c.cfg.OverlapWithGEMM, c.cfg.Graphs), func(t *testing.T) {
			w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 1}, world.SimOptions{})
			require.NoError(t, err)
			defer func() { require.NoError(t, w.Close()) }()
			r := w.Ranks[0]
			dev := &opCounter{Device: r.Dev, ops: map[string]int{}}
			const m, n = 8, 33
			cfg := c.cfg
			cfg.MaxM, cfg.N, cfg.DType, cfg.Timeout = m, n, dtype.I32, 10*time.Second
			ctx := context.Background()
			rs, err := rs2d.New(ctx, r.Comm, dev, cfg)
			require.NoError(t, err)
			defer func() { require.NoError(t, rs.Close()) }()
			in, out, free := rankBuffers(t, dev, m, n, 1, dtype.I32)
			defer free()
			s, err := dev.NewStream(device.Normal)
			require.NoError(t, err)
			defer s.Close()
			data := callInputs(dtype.I32, 3, 1, m*n)
			for call := range data {
				require.NoError(t, dev.CopyToDevice(in.Ptr, data[call][0]))
				require.NoError(t, dev.CopyToDevice(out.Ptr, check.Poison(dtype.I32, m*n)))
				if cfg.OverlapWithGEMM {
					require.NoError(t, rs.NextSignals().Raise(s, 0))
				}
				clear(dev.ops)
				require.NoError(t, rs.ReduceScatter(ctx, in, out, s))
				require.Equal(t, c.want, dev.ops, "call %d", call)
				require.NoError(t, s.Synchronize(ctx))
				got := make([]byte, out.Bytes())
				require.NoError(t, dev.CopyToHost(got, out.Ptr))
				require.Equal(t, data[call][0], got, "call %d", call)
			}
		})
	}
}
