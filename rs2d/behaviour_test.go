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
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// rankBuffers allocates a rank's input [m, n] and output [m/world, n].
func rankBuffers(t *testing.T, dev device.Device, m, n, world int, dt dtype.DType) (rs2d.Tensor, rs2d.Tensor, func()) {
	t.Helper()
	es := int64(dt.Size())
	in, err := dev.Alloc(int64(m*n) * es)
	require.NoError(t, err)
	out, err := dev.Alloc(int64(m/world*n) * es)
	require.NoError(t, err)
	return rs2d.Tensor{Ptr: in, Rows: m, Cols: n, DType: dt}, rs2d.Tensor{Ptr: out, Rows: m / world, Cols: n, DType: dt},
		func() { _ = dev.Free(in); _ = dev.Free(out) }
}

// callInputs is fresh random data of count elements for each call and rank:
// [call][rank].
func callInputs(dt dtype.DType, calls, ranks, count int) [][][]byte {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	inputs := make([][][]byte, calls)
	for c := range inputs {
		inputs[c] = make([][]byte, ranks)
		for r := range inputs[c] {
			inputs[c][r] = check.Random(rng, dt, count)
		}
	}
	return inputs
}

// callerAndProducer makes a rank's two streams for a GEMM-overlap test: the
// caller's, and the producer's that raises the signals.
func callerAndProducer(dev device.Device) (s, producer device.Stream, closeBoth func(), err error) {
	if s, err = dev.NewStream(device.Normal); err != nil {
		return nil, nil, nil, err
	}
	if producer, err = dev.NewStream(device.Normal); err != nil {
		_ = s.Close()
		return nil, nil, nil, err
	}
	return s, producer, func() { _ = producer.Close(); _ = s.Close() }, nil
}

// GEMM overlap: each rank's producer writes the rows of each destination
// rank in a random order, with random delays, and raises that rank's signal
// only then. The input starts as garbage, so a scatter that copied a block
// before its signal would be caught. One world also copies in chunks; two
// signal in segments (three of 2, 2 and 1 rows; seven, two of them empty),
// raised one by one in a random order across destinations.
func TestGEMMOverlapProducersInRandomOrder(t *testing.T) {
	for _, tc := range []struct {
		shape            bootstrap.Shape
		chunks, segments int
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 0, 0},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, 0, 0},
		{bootstrap.Shape{Nodes: 3, LocalSize: 1}, 0, 0},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 3, 0},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 0, 3},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, 0, 7},
	} {
		shape, chunks, segments := tc.shape, tc.chunks, tc.segments
		t.Run(fmt.Sprintf("%v/chunks%d/segments%d", shape, chunks, segments), func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, shape)
			ws, rowsPer, n, dt := shape.World(), 5, 24, dtype.I32
			m := rowsPer * ws
			const calls = 4
			inputs := callInputs(dt, calls, ws, m*n)
			ctx := testContext(t)
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				rank := r.Comm.Rank()
				knobs := rs2d.Tuning{Chunks: chunks, Segments: segments}
				rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true, Timeout: 2 * time.Minute, Tuning: knobs})
				if err != nil {
					return err
				}
				defer rs.Close()
				if rs.Config().Engine != rs2d.EngineCopy {
					return fmt.Errorf("overlap picked engine %v, want the copy engine", rs.Config().Engine)
				}
				in, out, free := rankBuffers(t, r.Dev, m, n, ws, dt)
				defer free()
				s, producer, closeStreams, err := callerAndProducer(r.Dev)
				if err != nil {
					return err
				}
				defer closeStreams()
				order := rs.ConsumptionOrder()
				if len(order) != ws {
					return fmt.Errorf("consumption order %v has %d ranks, want %d", order, len(order), ws)
				}
				blockBytes := rowsPer * n * dt.Size()
				got := make([]byte, rowsPer*n*dt.Size())
				for call := 0; call < calls; call++ {
					garbage := check.Poison(dt, m*n)
					if err := r.Dev.CopyToDevice(in.Ptr, garbage); err != nil {
						return err
					}
					sig := rs.NextSignals()
					if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
						return err
					}
					prng := rand.New(rand.NewPCG(uint64(rank), uint64(call)))
					if segments == 0 {
						for _, dest := range prng.Perm(ws) {
							time.Sleep(time.Duration(prng.IntN(1500)) * time.Microsecond)
							block := inputs[call][rank][dest*blockBytes : (dest+1)*blockBytes]
							if err := r.Dev.CopyToDevice(in.Ptr.Add(int64(dest*blockBytes)), block); err != nil {
								return err
							}
							if err := sig.Raise(producer, dest); err != nil {
								return err
							}
						}
					} else if err := raiseSegments(r.Dev, producer, sig, prng, inputs[call][rank], in.Ptr, m, ws); err != nil {
						return err
					}
					if err := s.Synchronize(ctx); err != nil {
						return err
					}
					if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
						return err
					}
					if rep := check.ReduceScatter(dt, inputs[call], rank, rowsPer, n).Compare(got, 1); !rep.OK() {
						return fmt.Errorf("call %d: %v", call, rep)
					}
				}
				return producer.Synchronize(ctx)
			})
			require.NoError(t, err)
		})
	}
}

// raiseSegments writes each segment of each of ws destinations' rows of
// data (a rank's [m, n] input) into in, in a random order with random
// delays, raising the segment's signal after it; empty segments are never
// raised (nothing waits for them).
func raiseSegments(dev device.Device, producer device.Stream, sig rs2d.Signals, prng *rand.Rand, data []byte, in device.Ptr, m, ws int) error {
	rowBytes, rowsPer := len(data)/m, m/ws
	type seg struct{ dest, j int }
	var segs []seg
	for dest := 0; dest < ws; dest++ {
		for j := 0; j < sig.Segments(); j++ {
			segs = append(segs, seg{dest, j})
		}
	}
	for _, i := range prng.Perm(len(segs)) {
		sg := segs[i]
		r0, r1 := sig.SegmentRows(m, sg.j)
		if r1 <= r0 {
			continue
		}
		time.Sleep(time.Duration(prng.IntN(700)) * time.Microsecond)
		off := (sg.dest*rowsPer + r0) * rowBytes
		if err := dev.CopyToDevice(in.Add(int64(off)), data[off:off+(r1-r0)*rowBytes]); err != nil {
			return err
		}
		if err := sig.RaiseSegment(producer, sg.dest, sg.j); err != nil {
			return err
		}
	}
	return nil
}

// Two contexts on the same ranks, used at the same time on different streams.
func TestConcurrentContexts(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w := simWorld(t, shape)
	ws := shape.World()
	ctx := testContext(t)
	type job struct {
		dt      dtype.DType
		rowsPer int
		n       int
		engine  rs2d.Engine
	}
	jobs := []job{{dtype.I32, 6, 40, rs2d.EngineSM}, {dtype.F32, 3, 129, rs2d.EngineCopy}}
	inputs := make([][][]byte, len(jobs))
	for j, jb := range jobs {
		rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(j)))
		inputs[j] = make([][]byte, ws)
		for r := range inputs[j] {
			inputs[j][r] = check.Random(rng, jb.dt, jb.rowsPer*ws*jb.n)
		}
	}
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		ctxs := make([]*rs2d.Context, len(jobs))
		for j, jb := range jobs { // collective: one after the other on every rank
			var err error
			if ctxs[j], err = rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: jb.rowsPer * ws, N: jb.n, DType: jb.dt, Engine: jb.engine}); err != nil {
				return err
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, len(jobs))
		for j, jb := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = func() error {
					in, out, free := rankBuffers(t, r.Dev, jb.rowsPer*ws, jb.n, ws, jb.dt)
					defer free()
					s, err := r.Dev.NewStream(device.Normal)
					if err != nil {
						return err
					}
					defer s.Close()
					if err := r.Dev.CopyToDevice(in.Ptr, inputs[j][r.Comm.Rank()]); err != nil {
						return err
					}
					got := make([]byte, jb.rowsPer*jb.n*jb.dt.Size())
					for call := 0; call < 20; call++ {
						if err := r.Dev.CopyToDevice(out.Ptr, check.Poison(jb.dt, jb.rowsPer*jb.n)); err != nil {
							return err
						}
						if err := ctxs[j].ReduceScatter(ctx, in, out, s); err != nil {
							return err
						}
						if err := s.Synchronize(ctx); err != nil {
							return err
						}
						if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
							return err
						}
						want := check.ReduceScatter(jb.dt, inputs[j], r.Comm.Rank(), jb.rowsPer, jb.n)
						if rep := want.Compare(got, rs2d.Roundings(shape.Nodes)); !rep.OK() {
							return fmt.Errorf("context %d call %d: %v", j, call, rep)
						}
					}
					return nil
				}()
			}()
		}
		wg.Wait()
		for _, c := range ctxs {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	})
	require.NoError(t, err)
}

// A rank that joins the context but never calls: the others' streams fail
// with a timeout that names it, within the configured bound, and everyone
// can still close.
func TestMissingRankTimesOutNamingIt(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.String(), func(t *testing.T) {
			t.Parallel()
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
			const bound = 500 * time.Millisecond
			w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: bound}})
			require.NoError(t, err)
			defer w.Close()
			ctx := testContext(t)
			errs := make([]error, shape.World())
			took := make([]time.Duration, shape.World())
			err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, Engine: engine, Timeout: 10 * time.Second})
				if err != nil {
					return err
				}
				defer rs.Close()
				if r.Comm.Rank() == 3 {
					return nil // never calls
				}
				in, out, free := rankBuffers(t, r.Dev, 8, 4, 4, dtype.F32)
				defer free()
				s, err := r.Dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer s.Close()
				start := time.Now()
				if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
					return err
				}
				errs[r.Comm.Rank()] = s.Synchronize(ctx)
				took[r.Comm.Rank()] = time.Since(start)
				return nil
			})
			require.NoError(t, err)
			for rank := 0; rank < 3; rank++ {
				require.ErrorIs(t, errs[rank], device.ErrTimeout, "rank %d", rank)
				require.Regexp(t, "rank 3|local rank 3", errs[rank].Error(), "rank %d's error names the missing rank", rank)
				require.Less(t, took[rank], 5*bound, "rank %d waited within the bound", rank)
			}
		})
	}
}

// A rank that never joins: New fails on the others, naming it.
func TestRankNeverJoins(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	errs := make([]error, 3)
	_ = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		if r.Comm.Rank() == 1 {
			return nil
		}
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 3, N: 2, DType: dtype.BF16})
		if err == nil {
			_ = rs.Close()
		}
		errs[r.Comm.Rank()] = err
		return nil
	})
	for _, rank := range []int{0, 2} {
		require.ErrorIs(t, errs[rank], device.ErrTimeout)
		require.ErrorContains(t, errs[rank], "ranks 1 never arrived")
	}
	require.Equal(t, sim.Counts{Devices: 3}, sim.Live(), "nothing but the devices is left after a failed New")
}

func TestBadInputRejectedBeforeWork(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w := simWorld(t, shape)
	ctx := testContext(t)
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		// Configurations refused by New.
		f32 := rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32}
		for _, c := range []struct {
			cfg   rs2d.Config
			knobs rs2d.Tuning
		}{
			{cfg: rs2d.Config{MaxM: 3, N: 4, DType: dtype.F32}},                         // MaxM not divisible by world
			{cfg: rs2d.Config{MaxM: 4, N: 0, DType: dtype.F32}},                         // no columns
			{cfg: rs2d.Config{MaxM: 4, N: 4}},                                           // no dtype
			{cfg: rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.Engine(9)}}, // no such engine
			{cfg: f32, knobs: rs2d.Tuning{Chunks: -1}},                                  // negative chunks
			{cfg: f32, knobs: rs2d.Tuning{RailLanes: -1}},                               // negative lanes
			{cfg: f32, knobs: rs2d.Tuning{RailLanes: 17}},                               // more lanes than MaxNCCLLanes
			{cfg: f32, knobs: rs2d.Tuning{SplitFirstBlock: true}},                       // an early signal without GEMM overlap
		} {
			c.cfg.Tuning = c.knobs
			if _, err := rs2d.New(ctx, r.Comm, r.Dev, c.cfg); !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("New(%+v, %+v) = %v, want an invalid-argument error", c.cfg, c.knobs, err)
			}
		}
		if _, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.EngineSM, OverlapWithGEMM: true}); !errors.Is(err, device.ErrNotSupported) {
			return fmt.Errorf("SM engine with GEMM overlap: %v, want not supported", err)
		}
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32})
		if err != nil {
			return err
		}
		in, out, free := rankBuffers(t, r.Dev, 8, 4, 2, dtype.F32)
		defer free()
		small, err := r.Dev.Alloc(16)
		if err != nil {
			return err
		}
		defer r.Dev.Free(small)
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		mod := func(t rs2d.Tensor, f func(*rs2d.Tensor)) rs2d.Tensor { f(&t); return t }
		cases := map[string][2]rs2d.Tensor{
			"M % world":         {mod(in, func(t *rs2d.Tensor) { t.Rows = 7 }), mod(out, func(t *rs2d.Tensor) { t.Rows = 3 })},
			"M > MaxM":          {mod(in, func(t *rs2d.Tensor) { t.Rows = 10 }), mod(out, func(t *rs2d.Tensor) { t.Rows = 5 })},
			"N mismatch":        {mod(in, func(t *rs2d.Tensor) { t.Cols = 3 }), mod(out, func(t *rs2d.Tensor) { t.Cols = 3 })},
			"dtype mismatch":    {mod(in, func(t *rs2d.Tensor) { t.DType = dtype.I32 }), mod(out, func(t *rs2d.Tensor) { t.DType = dtype.I32 })},
			"output rows":       {in, mod(out, func(t *rs2d.Tensor) { t.Rows = 2 })},
			"aliasing":          {in, mod(out, func(t *rs2d.Tensor) { t.Ptr = in.Ptr.Add(16) })},
			"input too small":   {mod(in, func(t *rs2d.Tensor) { t.Ptr = small }), out},
			"output too small":  {in, mod(out, func(t *rs2d.Tensor) { t.Ptr = small })},
			"nil input":         {mod(in, func(t *rs2d.Tensor) { t.Ptr = 0 }), out},
			"not device memory": {mod(in, func(t *rs2d.Tensor) { t.Ptr = 12345 }), out},
		}
		for name, c := range cases {
			if err := rs.ReduceScatter(ctx, c[0], c[1], s); !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("%s: got %v, want an invalid-argument error", name, err)
			}
		}
		// Not aligned to its elements (half the rows, so that the range
		// check passes): refused as such, and so is its registration.
		half := func(t *rs2d.Tensor) { t.Rows /= 2 }
		for name, c := range map[string][2]rs2d.Tensor{
			"input":  {mod(in, func(t *rs2d.Tensor) { half(t); t.Ptr = t.Ptr.Add(2) }), mod(out, half)},
			"output": {mod(in, half), mod(out, func(t *rs2d.Tensor) { half(t); t.Ptr = t.Ptr.Add(6) })},
		} {
			err := rs.ReduceScatter(ctx, c[0], c[1], s)
			if !errors.Is(err, device.ErrInvalidArgument) || !strings.Contains(err.Error(), name+" at ") ||
				!strings.Contains(err.Error(), "not aligned to its 4-byte fp32 elements") {
				return fmt.Errorf("misaligned %s: got %v, want an invalid-argument error saying so", name, err)
			}
		}
		if err := rs.Register(ctx, mod(in, func(t *rs2d.Tensor) { t.Ptr = t.Ptr.Add(2) })); !errors.Is(err, device.ErrInvalidArgument) ||
			!strings.Contains(err.Error(), "not aligned") {
			return fmt.Errorf("registering a misaligned input: got %v, want an invalid-argument error saying so", err)
		}
		// Nothing was enqueued, so a good call still works on every rank.
		if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		if err := rs.Close(); err != nil {
			return err
		}
		if err := rs.ReduceScatter(ctx, in, out, s); !errors.Is(err, device.ErrClosed) {
			return fmt.Errorf("call after Close: %v, want a closed error", err)
		}
		return rs.Close() // twice is fine
	})
	require.NoError(t, err)
}

// Work stuck waiting for a rank that is gone: Close ends the waits on this
// rank's own signal words, the work drains, everything is released (the
// package's leak check holds) and Close returns within its bound. Rank 1
// closes after rank 0 has: released, rank 0's copies into rank 1 resume,
// and rank 1's released reduce must not read its buffer while they land
// (garbage either way, but a data race in the simulated memory).
//
// The pull engine's copy-engine pulls (a registered input, pulled from the
// smallest blocks) wait on stream memory operations instead of in a kernel:
// Close must end those too.
func TestCloseReleasesStuckWaits(t *testing.T) {
	copyEngine := rs2d.Tuning{OneShotBytes: -1, CopyEnginePullBytes: 1, CopyEnginePullChunk: 32}
	for _, c := range []struct {
		engine rs2d.Engine
		graphs bool
		tuning rs2d.Tuning // with the pull engine: its input registered
	}{{rs2d.EngineCopy, false, rs2d.Tuning{}}, {rs2d.EngineSM, false, rs2d.Tuning{}}, {rs2d.EngineCopy, true, rs2d.Tuning{}},
		{rs2d.EngineSM, true, rs2d.Tuning{}}, {rs2d.EnginePull, false, copyEngine}, {rs2d.EnginePull, true, copyEngine}} {
		engine := c.engine
		t.Run(fmt.Sprintf("%v/graphs=%v", engine, c.graphs), func(t *testing.T) {
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
			// Device waits outlast the context's bound: the stream stays stuck.
			w := simWorld(t, shape)
			ctx := testContext(t)
			const bound = 300 * time.Millisecond
			survivorsClosed, firstClosed := make(chan struct{}), make(chan struct{})
			var closedCount sync.WaitGroup
			closedCount.Add(2)
			go func() { closedCount.Wait(); close(survivorsClosed) }()
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 6, N: 8, DType: dtype.F32, Engine: engine, Timeout: bound, Graphs: c.graphs,
					Tuning: c.tuning})
				if err != nil {
					return err
				}
				in, out, free := rankBuffers(t, r.Dev, 6, 8, 3, dtype.F32)
				defer free()
				if engine == rs2d.EnginePull {
					if err := rs.Register(ctx, in); err != nil {
						return err
					}
				}
				if r.Comm.Rank() == 2 { // gone: never calls, closes only at the very end
					<-survivorsClosed
					_ = rs.Close()
					return nil
				}
				defer closedCount.Done()
				s, err := r.Dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer s.Close()
				if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, bound)
				defer cancel()
				if err := s.Synchronize(short); !device.Stuck(err) {
					return fmt.Errorf("synchronize: %v, want the host bound to run out on stuck work", err)
				}
				if r.Comm.Rank() == 1 {
					select {
					case <-firstClosed:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				start := time.Now()
				closeErr := rs.Close()
				if r.Comm.Rank() == 0 {
					close(firstClosed)
				}
				if closeErr == nil || !errors.Is(closeErr, device.ErrTimeout) {
					return fmt.Errorf("close: %v, want the timeout reported", closeErr)
				}
				if took := time.Since(start); took > 4*bound+time.Second {
					return fmt.Errorf("close took %v", took)
				}
				drained, cancel2 := context.WithTimeout(ctx, 5*time.Second)
				defer cancel2()
				if err := s.Synchronize(drained); device.Stuck(err) {
					return fmt.Errorf("the caller's stream is still stuck after Close: %v", err)
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// prepareChecker passes everything on to its device and records the
// launches of kernels that were not prepared first.
type prepareChecker struct {
	multicastOf // forwards the multicast capability (the NVLS engine)
	mu          sync.Mutex
	prepared    map[*device.Kernel]bool
	launched    int
	late        []string
}

func (p *prepareChecker) Prepare(k *device.Kernel) error {
	p.mu.Lock()
	p.prepared[k] = true
	p.mu.Unlock()
	return p.Device.Prepare(k)
}

func (p *prepareChecker) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	p.mu.Lock()
	p.launched++
	if !p.prepared[k] {
		p.late = append(p.late, k.Name)
	}
	p.mu.Unlock()
	return p.Device.Launch(s, k, grid, args...)
}

// Every kernel a call launches was prepared when the context was made: on
// CUDA, loading a module at the first launch blocked behind a stream that was
// already waiting for a peer that had exited (the dying-rank test on H200s).
func TestKernelsArePreparedBeforeTheFirstCall(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.String(), func(t *testing.T) {
			t.Parallel()
			shape := bootstrap.Shape{Nodes: 2, LocalSize: 2} // the final cross-node reduce too
			w := simWorld(t, shape)
			ctx := testContext(t)
			checkers := make([]*prepareChecker, shape.World())
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				dev := &prepareChecker{multicastOf: multicastOf{r.Dev}, prepared: map[*device.Kernel]bool{}}
				checkers[r.Comm.Rank()] = dev
				const rowsPer, n = 3, 40
				m := rowsPer * shape.World()
				rs, err := rs2d.New(ctx, r.Comm, dev, rs2d.Config{MaxM: m, N: n, DType: dtype.BF16, Engine: engine})
				if err != nil {
					return err
				}
				defer rs.Close()
				in, out, free := rankBuffers(t, dev, m, n, shape.World(), dtype.BF16)
				defer free()
				s, err := dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer s.Close()
				if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
					return err
				}
				return s.Synchronize(ctx)
			})
			require.NoError(t, err)
			for rank, c := range checkers {
				require.Positive(t, c.launched, "rank %d launched no kernel", rank)
				require.Empty(t, c.late, "rank %d launched kernels it had not prepared", rank)
			}
		})
	}
}

// GEMM overlap: a producer raises a call's signals, then the call is
// rejected (bad output rows, or a done context) on every rank. The next
// call must not take those signals for its own: its producer writes the
// input only after the call is enqueued, so a scatter released by the old
// signals would copy the poisoned input. 2×2 also runs the rail, whose
// receive buffers alternate with the call parity.
func TestSignalsOfARejectedCallReleaseNothing(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w := simWorld(t, shape)
	ws, rowsPer, n, dt := shape.World(), 3, 16, dtype.I32
	m := rowsPer * ws
	const calls = 4
	inputs := callInputs(dt, calls, ws, m*n)
	ctx := testContext(t)
	err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dt, OverlapWithGEMM: true, Timeout: 2 * time.Minute})
		if err != nil {
			return err
		}
		defer rs.Close()
		in, out, free := rankBuffers(t, r.Dev, m, n, ws, dt)
		defer free()
		s, producer, closeStreams, err := callerAndProducer(r.Dev)
		if err != nil {
			return err
		}
		defer closeStreams()
		raiseAll := func(sig rs2d.Signals) error {
			for dest := 0; dest < ws; dest++ {
				if err := sig.Raise(producer, dest); err != nil {
					return err
				}
			}
			return producer.Synchronize(ctx)
		}
		badOut := out
		badOut.Rows++
		done, stop := context.WithCancel(ctx)
		stop()
		rejects := []struct {
			ctx context.Context
			out rs2d.Tensor
		}{{ctx, badOut}, {done, out}}
		got := make([]byte, rowsPer*n*dt.Size())
		for call := 0; call < calls; call++ {
			if call > 0 {
				// The producer of a call that will be rejected was quick:
				// its signals are up before the call is made.
				stale := rs.NextSignals()
				if err := raiseAll(stale); err != nil {
					return err
				}
				rej := rejects[call%len(rejects)]
				if err := rs.ReduceScatter(rej.ctx, in, rej.out, s); err == nil {
					return fmt.Errorf("call %d: a rejected call was accepted", call)
				}
				if v := rs.NextSignals().Value; v == stale.Value {
					return fmt.Errorf("call %d: the signal value %d of the rejected call is still the next call's", call, v)
				}
			}
			if err := r.Dev.CopyToDevice(in.Ptr, check.Poison(dt, m*n)); err != nil {
				return err
			}
			sig := rs.NextSignals()
			if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // time for a falsely released scatter to copy the poison
			if err := r.Dev.CopyToDevice(in.Ptr, inputs[call][rank]); err != nil {
				return err
			}
			if err := raiseAll(sig); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
				return err
			}
			if rep := check.ReduceScatter(dt, inputs[call], rank, rowsPer, n).Compare(got, 1); !rep.OK() {
				return fmt.Errorf("call %d: %v", call, rep)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
