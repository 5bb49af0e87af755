package rs2d_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// callAndRead makes the call on s, waits for it and returns its output.
func callAndRead(ctx context.Context, rs *rs2d.Context, dev device.Device, in, out rs2d.Tensor, s device.Stream) ([]byte, error) {
	if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
		return nil, err
	}
	if err := s.Synchronize(ctx); err != nil {
		return nil, err
	}
	got := make([]byte, out.Bytes())
	return got, dev.CopyToHost(got, out.Ptr)
}

// inputs hands every rank the same per-call random inputs, generated once.
type inputs struct {
	mu    sync.Mutex
	calls map[int][][]byte
	seed  uint64
	world int
	dt    dtype.DType
	count int
}

func (in *inputs) get(call int) [][]byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	if x, ok := in.calls[call]; ok {
		return x
	}
	rng := rand.New(rand.NewPCG(in.seed, uint64(call)))
	x := make([][]byte, in.world)
	for r := range x {
		x[r] = check.Random(rng, in.dt, in.count)
	}
	in.calls[call] = x
	delete(in.calls, call-2) // every rank is past call-2 by now
	return x
}

type runSpec struct {
	shape   bootstrap.Shape
	dt      dtype.DType
	rowsPer int // M_per_rank of the calls
	n       int
	calls   int
	cfg     rs2d.Config // MaxM, N, DType filled in when zero
	knobs   rs2d.Tuning
	opts    world.SimOptions
	inspect func(*rs2d.Context) error // checks a rank's context once made (nil: none)
}

// runWorld runs spec.calls reduce-scatters on a fresh simulated world and
// checks every rank's output of every call against the fp64 reference.
func runWorld(t *testing.T, spec runSpec) {
	t.Helper()
	ws := spec.shape.World()
	m := spec.rowsPer * ws
	cfg := spec.cfg
	if cfg.MaxM == 0 {
		cfg.MaxM = m
	}
	cfg.N, cfg.DType, cfg.Tuning = spec.n, spec.dt, spec.knobs
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	if spec.opts.Device.WaitTimeout == 0 {
		spec.opts.Device.WaitTimeout = 10 * time.Second
	}
	w, err := world.Sim(spec.shape, spec.opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	in := &inputs{calls: map[int][][]byte{}, seed: rand.Uint64(), world: ws, dt: spec.dt, count: m * spec.n}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		before := r.Dev.(*sim.Device).MemoryInUse()
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		defer rs.Close()
		// The planner counts every byte New allocates, and a bound holds.
		if made := r.Dev.(*sim.Device).MemoryInUse() - before; made > rs.Memory().Total() ||
			(cfg.MaxSymmetricBytes > 0 && made > cfg.MaxSymmetricBytes) {
			return fmt.Errorf("rank %d: New allocated %d bytes; the plan is %v, the bound %d", rank, made, rs.Memory(), cfg.MaxSymmetricBytes)
		}
		if spec.inspect != nil {
			if err := spec.inspect(rs); err != nil {
				return err
			}
		}
		es := spec.dt.Size()
		inPtr, err := r.Dev.Alloc(int64(m * spec.n * es))
		if err != nil {
			return err
		}
		defer r.Dev.Free(inPtr)
		outPtr, err := r.Dev.Alloc(int64(spec.rowsPer * spec.n * es))
		if err != nil {
			return err
		}
		defer r.Dev.Free(outPtr)
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()

		got := make([]byte, spec.rowsPer*spec.n*es)
		for call := 0; call < spec.calls; call++ {
			all := in.get(call)
			if err := r.Dev.CopyToDevice(inPtr, all[rank]); err != nil {
				return err
			}
			if err := r.Dev.CopyToDevice(outPtr, check.Poison(spec.dt, spec.rowsPer*spec.n)); err != nil {
				return err
			}
			err := rs.ReduceScatter(ctx,
				rs2d.Tensor{Ptr: inPtr, Rows: m, Cols: spec.n, DType: spec.dt},
				rs2d.Tensor{Ptr: outPtr, Rows: spec.rowsPer, Cols: spec.n, DType: spec.dt}, s)
			if err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			if err := r.Dev.CopyToHost(got, outPtr); err != nil {
				return err
			}
			rep := check.ReduceScatter(spec.dt, all, rank, spec.rowsPer, spec.n).Compare(got, rs.Roundings())
			if !rep.OK() {
				return fmt.Errorf("call %d: %v", call, rep)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// raceSubset is set under the race detector (race_test.go).
var raceSubset bool

// inRaceSubset says whether the shape matrix runs shape si with size zi and
// dtype di (of 4 each) under -race: two of each shape's sizes, each with
// one dtype, such that over the shapes every size meets every dtype's
// turn: (si+2j) mod 4 with dtype (si+j) mod 4, for j = 0, 1.
func inRaceSubset(si, zi, di int) bool {
	for j := range 2 {
		if zi == (si+2*j)%4 && di == (si+j)%len(dtype.All) {
			return true
		}
	}
	return false
}

// The world shapes every collective test runs on: nodes × GPUs per node.
var shapes = []bootstrap.Shape{
	{Nodes: 1, LocalSize: 1}, {Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 1},
	{Nodes: 2, LocalSize: 2}, {Nodes: 2, LocalSize: 4}, {Nodes: 4, LocalSize: 2}, {Nodes: 3, LocalSize: 3},
}

var engines = []rs2d.Engine{rs2d.EngineCopy, rs2d.EngineSM, rs2d.EnginePull, rs2d.EngineRing, rs2d.EngineNVLS}

func TestReduceScatterShapesAndDtypes(t *testing.T) {
	for _, engine := range engines {
		for si, shape := range shapes {
			for di, dt := range dtype.All {
				for zi, size := range []struct{ rowsPer, n int }{{1, 7}, {1, 1}, {33, 129}, {64, 256}} {
					if raceSubset && !inRaceSubset(si, zi, di) {
						continue
					}
					name := fmt.Sprintf("%v/%v/%v/rows%d/n%d", engine, shape, dt, size.rowsPer, size.n)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: size.rowsPer, n: size.n, calls: 2,
							cfg: rs2d.Config{Engine: engine}})
					})
				}
			}
		}
	}
}

// Chunked pipelines: the reduction of one chunk overlaps the scatter of the
// next; more chunks than rows, uneven chunks.
func TestReduceScatterChunks(t *testing.T) {
	for _, engine := range engines {
		for _, c := range []struct{ chunks, rowsPer, n int }{
			{3, 10, 33}, {4, 8, 64}, {7, 3, 5}, {32, 2, 100}, {2, 1, 4096},
		} {
			t.Run(fmt.Sprintf("%v/chunks%d/rows%d", engine, c.chunks, c.rowsPer), func(t *testing.T) {
				t.Parallel()
				runWorld(t, runSpec{shape: bootstrap.Shape{Nodes: 2, LocalSize: 4}, dt: dtype.I32, rowsPer: c.rowsPer, n: c.n, calls: 3,
					cfg: rs2d.Config{Engine: engine}, knobs: rs2d.Tuning{Chunks: c.chunks}})
			})
		}
	}
}

// The reset works: many calls on one context, fresh data each, M varying
// below MaxM.
func TestHundredCallsOnOneContext(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.String(), func(t *testing.T) {
			t.Parallel()
			runWorld(t, runSpec{shape: bootstrap.Shape{Nodes: 2, LocalSize: 2}, dt: dtype.I32, rowsPer: 3, n: 17, calls: 100,
				cfg: rs2d.Config{Engine: engine, MaxM: 4 * 8}})
		})
	}
}
