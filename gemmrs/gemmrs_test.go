package gemmrs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// problem is one call's inputs on every rank (each rank's A_r and B_r
// differ) and the fp64 reference of every rank's output.
type problem struct {
	a, b   [][]byte    // per rank: A_r [M, K], B_r [K, N]
	exact  [][]float64 // per rank q: its [M/world, N] rows of Σ_r A_r·B_r
	absSum [][]float64 // per rank q: Σ_r Σ_k |A_r[i,k]·B_r[k,j]|
}

type problems struct {
	mu              sync.Mutex
	seed            uint64
	dt              dtype.DType
	world, m, n, k  int
	byCall          map[int]*problem
	once            map[int]*sync.Once
	shared, perRank bool
}

func newProblems(dt dtype.DType, world, m, n, k int) *problems {
	return &problems{seed: rand.Uint64(), dt: dt, world: world, m: m, n: n, k: k, byCall: map[int]*problem{}, once: map[int]*sync.Once{}}
}

// get returns call's problem, generated (and referenced) once for all ranks.
func (ps *problems) get(call int) *problem {
	ps.mu.Lock()
	once, ok := ps.once[call]
	if !ok {
		once = &sync.Once{}
		ps.once[call] = once
	}
	ps.mu.Unlock()
	once.Do(func() {
		rng := rand.New(rand.NewPCG(ps.seed, uint64(call)))
		p := &problem{}
		for r := 0; r < ps.world; r++ {
			p.a = append(p.a, check.Random(rng, ps.dt, ps.m*ps.k))
			p.b = append(p.b, check.Random(rng, ps.dt, ps.k*ps.n))
		}
		rpr := ps.m / ps.world
		for q := 0; q < ps.world; q++ {
			exact, abs := make([]float64, rpr*ps.n), make([]float64, rpr*ps.n)
			for r := 0; r < ps.world; r++ {
				for i := 0; i < rpr; i++ {
					for kk := 0; kk < ps.k; kk++ {
						x := ps.dt.Get(p.a[r], (q*rpr+i)*ps.k+kk)
						for j := 0; j < ps.n; j++ {
							prod := x * ps.dt.Get(p.b[r], kk*ps.n+j)
							exact[i*ps.n+j] += prod
							abs[i*ps.n+j] += math.Abs(prod)
						}
					}
				}
			}
			p.exact, p.absSum = append(p.exact, exact), append(p.absSum, abs)
		}
		ps.mu.Lock()
		ps.byCall[call] = p
		ps.mu.Unlock()
	})
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.byCall[call]
}

// compare checks rank q's output against the reference within
// gemmrs.Tolerance and returns the largest fraction of the bound used.
func (ps *problems) compare(p *problem, q, nodes int, got []byte) (float64, error) {
	worst := 0.0
	for e, want := range p.exact[q] {
		v := ps.dt.Get(got, e)
		tol := gemmrs.Tolerance(ps.dt, ps.k, ps.world, nodes, p.absSum[q][e])
		diff := math.Abs(v - want)
		if math.IsNaN(v) || diff > tol {
			return worst, fmt.Errorf("rank %d element (%d, %d): got %g, want %g (tolerance %.3g)", q, e/ps.n, e%ps.n, v, want, tol)
		}
		worst = max(worst, diff/tol)
	}
	return worst, nil
}

// rankBufs are one rank's A, B, out and stream.
type rankBufs struct {
	dev       device.Device
	a, b, out device.Ptr
	s         device.Stream
}

func newRankBufs(dev device.Device, dt dtype.DType, m, n, k, world int) (*rankBufs, error) {
	rb := &rankBufs{dev: dev}
	es := int64(dt.Size())
	var err error
	for _, x := range []struct {
		p    *device.Ptr
		size int64
	}{{&rb.a, int64(m*k) * es}, {&rb.b, int64(k*n) * es}, {&rb.out, int64(m/world*n) * es}} {
		if *x.p, err = dev.Alloc(x.size); err != nil {
			return nil, errors.Join(err, rb.close())
		}
	}
	if rb.s, err = dev.NewStream(device.Normal); err != nil {
		return nil, errors.Join(err, rb.close())
	}
	return rb, nil
}

// close waits for the stream (a failed call may have left work that reads
// the buffers), then frees everything.
func (rb *rankBufs) close() error {
	var errs []error
	if rb.s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = rb.s.Synchronize(ctx) // its error was reported by the call that failed
		errs = append(errs, rb.s.Close())
	}
	for _, p := range []device.Ptr{rb.a, rb.b, rb.out} {
		if p != 0 {
			errs = append(errs, rb.dev.Free(p))
		}
	}
	return errors.Join(errs...)
}

// overlappedCalls runs three overlapped calls of g on rank's buffers, each
// on fresh operands and checked against fp64, then after(call) if given.
func overlappedCalls(ctx context.Context, g *gemmrs.GemmRS, rb *rankBufs, ps *problems, rank, nodes int, after func(call int) error) error {
	for call := 0; call < 3; call++ {
		p := ps.get(call)
		got, err := runCall(ctx, g, rb, ps, p, rank, gemmrs.Overlap)
		if err != nil {
			return fmt.Errorf("call %d: %w", call, err)
		}
		if _, err := ps.compare(p, rank, nodes, got); err != nil {
			return fmt.Errorf("call %d: %w", call, err)
		}
		if after != nil {
			if err := after(call); err != nil {
				return err
			}
		}
	}
	return nil
}

// runCall uploads call's inputs, poisons C and the output, runs one call in
// mode, and returns the output.
func runCall(ctx context.Context, g *gemmrs.GemmRS, rb *rankBufs, ps *problems, p *problem, rank int, mode gemmrs.Mode) ([]byte, error) {
	dt, rpr := ps.dt, ps.m/ps.world
	if err := rb.dev.CopyToDevice(rb.a, p.a[rank]); err != nil {
		return nil, err
	}
	if err := rb.dev.CopyToDevice(rb.b, p.b[rank]); err != nil {
		return nil, err
	}
	if err := rb.dev.CopyToDevice(rb.out, check.Poison(dt, rpr*ps.n)); err != nil {
		return nil, err
	}
	if err := g.PoisonC(rb.s, ps.m); err != nil {
		return nil, err
	}
	a := gemmrs.Tensor{Ptr: rb.a, Rows: ps.m, Cols: ps.k, DType: dt}
	b := gemmrs.Tensor{Ptr: rb.b, Rows: ps.k, Cols: ps.n, DType: dt}
	out := gemmrs.Tensor{Ptr: rb.out, Rows: rpr, Cols: ps.n, DType: dt}
	if err := g.RunMode(ctx, mode, a, b, out, rb.s); err != nil {
		// Whatever the failed call enqueued is ordered before s's end:
		// wait for it before the next upload overwrites A and B.
		return nil, errors.Join(err, rb.s.Synchronize(ctx))
	}
	if err := rb.s.Synchronize(ctx); err != nil {
		return nil, err
	}
	got := make([]byte, rpr*ps.n*dt.Size())
	return got, rb.dev.CopyToHost(got, rb.out)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func simWorld(t *testing.T, shape bootstrap.Shape, wait time.Duration) *world.World {
	t.Helper()
	w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: wait}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })
	return w
}

func baseConfig(dt dtype.DType, m, n, k int) gemmrs.Config {
	return gemmrs.Config{MaxM: m, N: n, KLocal: k, DType: dt, Timeout: 2 * time.Minute}
}

var worlds = []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 2}, {Nodes: 1, LocalSize: 4}, {Nodes: 1, LocalSize: 1}, {Nodes: 2, LocalSize: 1}}

// TestSequentialReadsCInPlace: on nodes of several GPUs C is the sequential
// calls' context's symmetric input, so that their reduce-scatter reads it
// where the GEMM wrote it; on nodes of one GPU (no symmetric input) C is a
// buffer of the GemmRS's.
func TestSequentialReadsCInPlace(t *testing.T) {
	for _, shape := range worlds {
		t.Run(shape.String(), func(t *testing.T) {
			w := simWorld(t, shape, 10*time.Second)
			m := 4 * shape.World()
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
				g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dtype.BF16, m, 16, 16))
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, g.Close()) }()
				in, err := gemmrs.SequentialContext(g).Input(m)
				switch {
				case shape.LocalSize == 1 && !errors.Is(err, device.ErrNotSupported):
					return fmt.Errorf("one GPU per node: the sequential context's Input: %v, want ErrNotSupported", err)
				case shape.LocalSize == 1:
					return nil
				case err != nil:
					return err
				case in.Ptr != g.CBuffer().Ptr:
					return fmt.Errorf("C at %#x, the sequential context's input at %#x", g.CBuffer().Ptr, in.Ptr)
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// TestOverlapAndSequentialMatchReference runs both modes on the same random
// inputs for several calls and checks each against the fp64 reference
// within gemmrs.Tolerance; on the CPU backend the two modes also agree bit
// for bit (the same fp32 arithmetic per element; both contexts' engines add
// the blocks in rank order in fp32 and round once).
func TestOverlapAndSequentialMatchReference(t *testing.T) {
	for _, shape := range worlds {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
			for i, size := range []struct{ rowsPer, n, k int }{{8, 17, 16}, {16, 32, 64}, {64, 9, 33}, {1, 1, 1}, {24, 8, 8}, {20, 40, 24}} {
				split := gemmrs.SplitOn // the first block in halves ...
				if i%2 == 1 {
					split = gemmrs.SplitOff // ... but for half the sizes
				}
				t.Run(fmt.Sprintf("%v/%v/rows%d/n%d/k%d/split=%v", shape, dt, size.rowsPer, size.n, size.k, split == gemmrs.SplitOn), func(t *testing.T) {
					t.Parallel()
					ws := shape.World()
					m := size.rowsPer * ws
					ps := newProblems(dt, ws, m, size.n, size.k)
					w := simWorld(t, shape, 10*time.Second)
					var mu sync.Mutex
					worst := 0.0
					err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
						cfg := baseConfig(dt, m, size.n, size.k)
						cfg.Tuning.SplitFirstBlock = split
						g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
						if err != nil {
							return err
						}
						defer func() { err = errors.Join(err, g.Close()) }()
						// Auto takes the own GEMM (its twin on the CPU) where
						// it can compute the product and nothing asks for
						// the block producer's split.
						wantOwn := dt != dtype.F32 && size.n%8 == 0 && size.k%8 == 0 && split != gemmrs.SplitOn
						if choice, why := g.GemmChoice(); (choice == gemmrs.GemmOwn) != wantOwn {
							return fmt.Errorf("GEMM %v (%s), want own: %v", choice, why, wantOwn)
						}
						rb, err := newRankBufs(r.Dev, dt, m, size.n, size.k, ws)
						if err != nil {
							return err
						}
						defer func() { err = errors.Join(err, rb.close()) }()
						rank := r.Comm.Rank()
						for call := 0; call < 3; call++ {
							p := ps.get(call)
							var outs [][]byte
							for _, mode := range []gemmrs.Mode{gemmrs.Overlap, gemmrs.Sequential, gemmrs.Auto} {
								got, err := runCall(ctx, g, rb, ps, p, rank, mode)
								if err != nil {
									return fmt.Errorf("call %d, %v: %w", call, mode, err)
								}
								use, err := ps.compare(p, rank, shape.Nodes, got)
								if err != nil {
									return fmt.Errorf("call %d, %v: %w", call, mode, err)
								}
								mu.Lock()
								worst = max(worst, use)
								mu.Unlock()
								outs = append(outs, got)
								want := mode
								if mode == gemmrs.Auto {
									want = g.ModeFor(m)
								}
								if got := g.LastMode(); got != want {
									return fmt.Errorf("call %d ran %v, asked %v", call, got, want)
								}
							}
							if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[0], outs[2]) {
								return fmt.Errorf("call %d: overlap and sequential outputs differ on the CPU backend", call)
							}
						}
						return nil
					})
					require.NoError(t, err)
					t.Logf("largest error: %.1f%% of the bound", 100*worst)
				})
			}
		}
	}
}

// TestGraphsCallsInARow: with Config.Graphs every call's signal words carry
// the same values and are reset on the device, so a word left raised by one
// call would let the next read C before its GEMM wrote it (C is poisoned
// before each call). Calls in a row in every mode, with the own GEMM, the
// device's matmul block by block and its split first block (early signals),
// against the fp64 reference.
func TestGraphsCallsInARow(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}} {
		for _, tc := range []struct {
			gemm  gemmrs.Gemm
			split gemmrs.Split
		}{{gemmrs.GemmOwn, gemmrs.SplitOff}, {gemmrs.GemmCuBLAS, gemmrs.SplitOff}, {gemmrs.GemmCuBLAS, gemmrs.SplitOn}} {
			t.Run(fmt.Sprintf("%v/%v/split=%v", shape, tc.gemm, tc.split == gemmrs.SplitOn), func(t *testing.T) {
				t.Parallel()
				ws, n, k := shape.World(), 32, 64
				m := 16 * ws
				ps := newProblems(dtype.BF16, ws, m, n, k)
				w := simWorld(t, shape, 10*time.Second)
				err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
					cfg := baseConfig(dtype.BF16, m, n, k)
					cfg.Graphs = true
					cfg.Tuning.Gemm, cfg.Tuning.SplitFirstBlock = tc.gemm, tc.split
					g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
					if err != nil {
						return err
					}
					defer func() { err = errors.Join(err, g.Close()) }()
					if choice, why := g.GemmChoice(); choice != tc.gemm {
						return fmt.Errorf("GEMM %v (%s), asked for %v", choice, why, tc.gemm)
					}
					if !gemmrs.OverlapContext(g).Config().Graphs || !gemmrs.SequentialContext(g).Config().Graphs {
						return errors.New("a context without Config.Graphs")
					}
					rb, err := newRankBufs(r.Dev, dtype.BF16, m, n, k, ws)
					if err != nil {
						return err
					}
					defer func() { err = errors.Join(err, rb.close()) }()
					modes := []gemmrs.Mode{gemmrs.Overlap, gemmrs.Overlap, gemmrs.Sequential, gemmrs.Overlap, gemmrs.Auto, gemmrs.Overlap}
					for call, mode := range modes {
						p := ps.get(call)
						got, err := runCall(ctx, g, rb, ps, p, r.Comm.Rank(), mode)
						if err != nil {
							return fmt.Errorf("call %d, %v: %w", call, mode, err)
						}
						if _, err := ps.compare(p, r.Comm.Rank(), shape.Nodes, got); err != nil {
							return fmt.Errorf("call %d, %v: %w", call, mode, err)
						}
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

// The own GEMM with its rows signalled in segments (three per destination,
// 14 rows each, so row tiles meet several segments and destinations), on
// poisoned C and output, against the fp64 reference, with the SMs pushing
// none, part or all of the last peer's block after the GEMM (Help, on one
// node); and the device's matmul when asked for, with the same signals.
func TestOwnGemmInSegments(t *testing.T) {
	one, two := bootstrap.Shape{Nodes: 1, LocalSize: 4}, bootstrap.Shape{Nodes: 2, LocalSize: 2}
	for _, tc := range []struct {
		shape  bootstrap.Shape
		choice gemmrs.Gemm
		help   int
	}{{one, gemmrs.GemmOwn, -1}, {one, gemmrs.GemmOwn, 40}, {one, gemmrs.GemmOwn, 100}, {two, gemmrs.GemmOwn, 0},
		{one, gemmrs.GemmCuBLAS, 0}, {two, gemmrs.GemmCuBLAS, 0}} {
		shape, choice := tc.shape, tc.choice
		t.Run(fmt.Sprintf("%v/%v/help%d", shape, choice, tc.help), func(t *testing.T) {
			t.Parallel()
			const dt, rowsPer, n, k = dtype.BF16, 42, 24, 16
			ws := shape.World()
			m := rowsPer * ws
			ps := newProblems(dt, ws, m, n, k)
			w := simWorld(t, shape, 10*time.Second)
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
				cfg := baseConfig(dt, m, n, k)
				cfg.Tuning = gemmrs.Tuning{Gemm: choice, ReduceScatter: rs2d.Tuning{Segments: 3}, Help: tc.help}
				g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, g.Close()) }()
				if got, why := g.GemmChoice(); got != choice {
					return fmt.Errorf("GEMM %v (%s), asked for %v", got, why, choice)
				}
				rb, err := newRankBufs(r.Dev, dt, m, n, k, ws)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, rb.close()) }()
				return overlappedCalls(ctx, g, rb, ps, r.Comm.Rank(), shape.Nodes, nil)
			})
			require.NoError(t, err)
		})
	}
}

// On one node, with blocks of whole row tiles, the own GEMM sums the own
// block in its epilogue (Summed: on two ranks always, on three or four
// where Tuning.SumOwnBlock says, here on, or auto at a small product: off)
// and every call's output is exact against fp64, call after call, with the
// GEMM's signals in one segment per block and in several (the arrivals
// then come segment by segment); with blocks that are not whole row tiles
// or on two nodes it does not, and the reduction pass does the same sums.
func TestOwnGemmSumsOwnBlock(t *testing.T) {
	for _, tc := range []struct {
		shape    bootstrap.Shape
		rowsPer  int
		segments int
		sumOwn   gemmrs.Split
		summed   bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, 384, 3, gemmrs.SplitAuto, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, 256, 0, gemmrs.SplitOff, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, 128, 8, gemmrs.SplitAuto, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 128, 3, gemmrs.SplitOn, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, 256, 0, gemmrs.SplitOn, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, 128, 3, gemmrs.SplitAuto, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, 256, 0, gemmrs.SplitOff, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, 96, 2, gemmrs.SplitAuto, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, 128, 2, gemmrs.SplitOn, false},
	} {
		shape := tc.shape
		t.Run(fmt.Sprintf("%v/rows%d/segments%d/sum-%v", shape, tc.rowsPer, tc.segments, tc.sumOwn), func(t *testing.T) {
			t.Parallel()
			const dt, n, k = dtype.BF16, 24, 16
			ws := shape.World()
			m := tc.rowsPer * ws
			ps := newProblems(dt, ws, m, n, k)
			w := simWorld(t, shape, 30*time.Second)
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
				cfg := baseConfig(dt, m, n, k)
				cfg.Tuning = gemmrs.Tuning{Gemm: gemmrs.GemmOwn, ReduceScatter: rs2d.Tuning{Segments: tc.segments}, SumOwnBlock: tc.sumOwn}
				g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, g.Close()) }()
				rb, err := newRankBufs(r.Dev, dt, m, n, k, ws)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, rb.close()) }()
				return overlappedCalls(ctx, g, rb, ps, r.Comm.Rank(), shape.Nodes, func(call int) error {
					if g.Summed() != tc.summed {
						return fmt.Errorf("call %d: summed in the GEMM's epilogue: %v, want %v", call, g.Summed(), tc.summed)
					}
					return nil
				})
			})
			require.NoError(t, err)
		})
	}
}

// gates holds one rank's delay words: before the GEMM of block d the GEMM
// stream waits for word d to reach the call's number, which a goroutine
// writes at random times in a shuffled order.
type gates struct {
	dev  device.Device
	base device.Ptr
	n    int
	rel  device.Stream // writes the gate words
}

func (gt *gates) word(d int) device.Word {
	return device.Word{Addr: gt.base.Add(int64(4 * d)), Label: fmt.Sprintf("test gate of block %d", d)}
}

// release opens every gate for call (1-based) in a shuffled order, with
// random pauses, and returns when all are open.
func (gt *gates) release(rng *rand.Rand, call uint32, maxPause time.Duration) error {
	for _, d := range rng.Perm(gt.n) {
		time.Sleep(time.Duration(rng.Int64N(int64(maxPause))))
		if err := gt.dev.WriteValue32(gt.rel, gt.word(d).Addr, call); err != nil {
			return err
		}
	}
	return nil
}

// perturbedRun runs calls with a perturbed producer on every rank: the
// GEMM computes the blocks in a shuffled order, each block's GEMM held back
// by a gate released at a random time; with sideSignals the signals are
// raised not by the GEMM stream but by a goroutine per rank, on a side
// stream of its own, in another shuffled order with random pauses;
// withEarly, that goroutine raises them at once, without waiting for the
// GEMM (a broken producer). It returns each rank's error.
func perturbedRun(t *testing.T, shape bootstrap.Shape, sideSignals, early bool) error {
	const dt = dtype.BF16
	ws := shape.World()
	m, n, k := 16*ws, 24, 32
	ps := newProblems(dt, ws, m, n, k)
	w := simWorld(t, shape, 10*time.Second)
	return w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		rank := r.Comm.Rank()
		rng := rand.New(rand.NewPCG(uint64(rank), rand.Uint64()))
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		rb, err := newRankBufs(r.Dev, dt, m, n, k, ws)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rb.close()) }()
		gt := &gates{dev: r.Dev, n: ws}
		if gt.base, err = r.Dev.Alloc(int64(4 * ws)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, r.Dev.Free(gt.base)) }()
		if err := r.Dev.CopyToDevice(gt.base, make([]byte, 4*ws)); err != nil {
			return err
		}
		side, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, side.Close()) }()
		if gt.rel, err = r.Dev.NewStream(device.Normal); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, gt.rel.Close()) }()

		var call uint32
		var wg sync.WaitGroup
		errc := make(chan error, 2)
		var signals func(device.Event, func(device.Stream, int) error) error
		if sideSignals {
			signals = func(done device.Event, raise func(device.Stream, int) error) error {
				if !early {
					if err := side.WaitEvent(done); err != nil {
						return err
					}
				}
				order := rng.Perm(ws)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, d := range order {
						time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
						if err := raise(side, d); err != nil {
							errc <- err
							return
						}
					}
				}()
				return nil
			}
		}
		gemmrs.SetTestHooks(g,
			func(order []int) []int {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				return order
			},
			func(gs device.Stream, d int) error { return r.Dev.WaitValue32(gs, gt.word(d), device.GEQ, call) },
			signals)
		for c := 0; c < 4; c++ {
			call = uint32(c + 1)
			p := ps.get(c)
			gateRNG := rand.New(rand.NewPCG(uint64(rank), uint64(c)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				pause := 3 * time.Millisecond
				if early {
					pause = 20 * time.Millisecond // the GEMM is late; the early signals are not
				}
				if err := gt.release(gateRNG, call, pause); err != nil {
					errc <- err
				}
			}()
			got, err := runCall(ctx, g, rb, ps, p, rank, gemmrs.Overlap)
			wg.Wait()
			if err != nil {
				return fmt.Errorf("call %d: %w", c, err)
			}
			select {
			case err := <-errc:
				return err
			default:
			}
			if _, err := ps.compare(p, rank, shape.Nodes, got); err != nil {
				return fmt.Errorf("call %d: %w", c, err)
			}
		}
		return nil
	})
}

func TestPerturbedProducerStillExact(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 2}, {Nodes: 1, LocalSize: 4}} {
		for _, side := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/side-signals=%v", shape, side), func(t *testing.T) {
				t.Parallel()
				require.NoError(t, perturbedRun(t, shape, side, false))
			})
		}
	}
}

// TestEarlySignalsAreCaught shows the check above can fail: a producer that
// raises the signals before its (delayed) GEMM lets the scatter read C, or
// the reduction read the receive rows, poisoned with NaNs, and the
// comparison catches it.
func TestEarlySignalsAreCaught(t *testing.T) {
	if raceDetector {
		t.Skip("the broken producer races with the scatter on purpose, which the race detector reports")
	}
	err := perturbedRun(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, true, true)
	require.Error(t, err)
	require.Contains(t, err.Error(), "NaN")
}

// TestFailedCallThenFreshContext: one rank never makes its second call; the
// others' streams time out naming what they waited for. After everyone
// closes, a fresh GemmRS on the same devices computes correct results: the
// signal words of the failed call (raised by the ranks that did call) do
// not release anything in the new context.
func TestFailedCallThenFreshContext(t *testing.T) {
	const dt = dtype.BF16
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	ws := shape.World()
	m, n, k := 8*ws, 16, 24
	ps := newProblems(dt, ws, m, n, k)
	w := simWorld(t, shape, 300*time.Millisecond)
	const absent = 1
	var mu sync.Mutex
	phase1 := map[int]error{}
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		rank := r.Comm.Rank()
		rb, err := newRankBufs(r.Dev, dt, m, n, k, ws)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rb.close()) }()
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		got, err := runCall(ctx, g, rb, ps, ps.get(0), rank, gemmrs.Overlap)
		if err == nil {
			_, err = ps.compare(ps.get(0), rank, shape.Nodes, got)
		}
		if err != nil {
			return errors.Join(err, g.Close())
		}
		var failed error
		if rank != absent {
			_, failed = runCall(ctx, g, rb, ps, ps.get(1), rank, gemmrs.Overlap)
		}
		mu.Lock()
		phase1[rank] = failed
		mu.Unlock()
		_ = g.Close() // collective; reports the failed streams on the ranks that called

		// A fresh context and a fresh caller stream (the old one failed).
		if err := rb.s.Close(); err != nil {
			return err
		}
		if rb.s, err = r.Dev.NewStream(device.Normal); err != nil {
			return err
		}
		g2, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g2.Close()) }()
		for call := 2; call < 4; call++ {
			got, err := runCall(ctx, g2, rb, ps, ps.get(call), rank, gemmrs.Overlap)
			if err != nil {
				return fmt.Errorf("fresh context, call %d: %w", call, err)
			}
			if _, err := ps.compare(ps.get(call), rank, shape.Nodes, got); err != nil {
				return fmt.Errorf("fresh context, call %d: %w", call, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
	for rank := 0; rank < ws; rank++ {
		if rank == absent {
			require.NoError(t, phase1[rank])
			continue
		}
		require.ErrorIs(t, phase1[rank], device.ErrTimeout, "rank %d", rank)
		t.Logf("rank %d, failed call: %v", rank, phase1[rank])
	}
}

// TestBrokenAfterPartialEnqueue: a call that fails to enqueue after it
// raised a signal leaves the GemmRS unusable (a later call would take that
// signal for its own); one that fails before raising any does not.
func TestBrokenAfterPartialEnqueue(t *testing.T) {
	const dt = dtype.BF16
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	m, n, k := 4, 4, 4
	ps := newProblems(dt, 2, m, n, k)
	w := simWorld(t, shape, 5*time.Second)
	boom := errors.New("boom")
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		rb, err := newRankBufs(r.Dev, dt, m, n, k, 2)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rb.close()) }()
		blocks := 0
		failAt := 0
		gemmrs.SetTestHooks(g, nil, func(device.Stream, int) error {
			blocks++
			if blocks == failAt {
				return boom
			}
			return nil
		}, nil)
		failAt = 1 // before the first block: nothing raised
		_, err = runCall(ctx, g, rb, ps, ps.get(0), r.Comm.Rank(), gemmrs.Overlap)
		if !errors.Is(err, boom) {
			return fmt.Errorf("first failure: %v", err)
		}
		blocks, failAt = 0, 0
		got, err := runCall(ctx, g, rb, ps, ps.get(1), r.Comm.Rank(), gemmrs.Overlap)
		if err != nil {
			return fmt.Errorf("a failure before any signal must leave the GemmRS usable: %w", err)
		}
		if _, err := ps.compare(ps.get(1), r.Comm.Rank(), 1, got); err != nil {
			return err
		}
		blocks, failAt = 0, 2 // after the first block's signal
		_, err = runCall(ctx, g, rb, ps, ps.get(2), r.Comm.Rank(), gemmrs.Overlap)
		if !errors.Is(err, boom) {
			return fmt.Errorf("second failure: %v", err)
		}
		_, err = runCall(ctx, g, rb, ps, ps.get(3), r.Comm.Rank(), gemmrs.Sequential)
		if !errors.Is(err, device.ErrClosed) {
			return fmt.Errorf("a call after a failure with raised signals: %v, want ErrClosed", err)
		}
		return nil
	})
	require.NoError(t, err)
}

// hidden is a device without Matmul.
type hidden struct{ device.Device }

func TestNewAgreesOnTheGemm(t *testing.T) {
	w := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 5*time.Second)
	errs := make([]error, 2)
	_ = w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
		dev := r.Dev
		if r.Comm.Rank() == 1 {
			dev = hidden{dev}
		}
		g, err := gemmrs.New(ctx, r.Comm, dev, baseConfig(dtype.BF16, 4, 4, 4))
		if err == nil {
			err = errors.Join(errors.New("New succeeded"), g.Close())
		}
		errs[r.Comm.Rank()] = err
		return nil
	})
	require.ErrorIs(t, errs[0], device.ErrPeer)
	require.ErrorContains(t, errs[0], "rank 1:")
	require.ErrorIs(t, errs[1], device.ErrNotSupported)
}

func TestValidation(t *testing.T) {
	w := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 5*time.Second)
	base := baseConfig(dtype.BF16, 4, 4, 4)
	for name, c := range map[string]struct {
		cfg   gemmrs.Config
		knobs gemmrs.Tuning
	}{
		"MaxM not divisible":      {cfg: baseConfig(dtype.BF16, 5, 4, 4)},
		"zero KLocal":             {cfg: baseConfig(dtype.BF16, 4, 4, 0)},
		"int32":                   {cfg: baseConfig(dtype.I32, 4, 4, 4)},
		"mode":                    {cfg: func() gemmrs.Config { c := base; c.Mode = 7; return c }()},
		"split value":             {cfg: base, knobs: gemmrs.Tuning{SplitFirstBlock: 3}},
		"KLocal × N overflows":    {cfg: baseConfig(dtype.BF16, 4, 1<<40, 1<<23)},
		"MaxM × KLocal overflows": {cfg: baseConfig(dtype.F32, 4, 4, 1<<62)},
		"e4m3 to fp32":            {cfg: func() gemmrs.Config { c := baseConfig(dtype.F32, 4, 4, 16); c.Input = dtype.E4M3; return c }()},
		"e4m3 by cuBLAS":          {cfg: func() gemmrs.Config { c := baseConfig(dtype.BF16, 4, 4, 16); c.Input = dtype.E4M3; return c }(), knobs: gemmrs.Tuning{Gemm: gemmrs.GemmCuBLAS}},
		"int32 inputs":            {cfg: func() gemmrs.Config { c := base; c.Input = dtype.I32; return c }()},
	} {
		c.cfg.Tuning = c.knobs
		_, err := gemmrs.New(testCtx(t), w.Ranks[0].Comm, w.Ranks[0].Dev, c.cfg)
		require.ErrorIs(t, err, device.ErrInvalidArgument, name)
	}

	const dt = dtype.F16
	m, n, k := 8, 6, 5
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		rb, err := newRankBufs(r.Dev, dt, m, n, k, 2)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rb.close()) }()
		a := gemmrs.Tensor{Ptr: rb.a, Rows: m, Cols: k, DType: dt}
		b := gemmrs.Tensor{Ptr: rb.b, Rows: k, Cols: n, DType: dt}
		out := gemmrs.Tensor{Ptr: rb.out, Rows: m / 2, Cols: n, DType: dt}
		type call struct{ a, b, out gemmrs.Tensor }
		with := func(f func(*call)) call { c := call{a, b, out}; f(&c); return c }
		for name, c := range map[string]call{
			"A columns":       with(func(c *call) { c.a.Cols = k + 1 }),
			"B rows":          with(func(c *call) { c.b.Rows = k - 1 }),
			"B columns":       with(func(c *call) { c.b.Cols = n + 1 }),
			"M above MaxM":    with(func(c *call) { c.a.Rows = 2 * m; c.out.Rows = m }),
			"M not divisible": with(func(c *call) { c.a.Rows = 3 }),
			"dtype":           with(func(c *call) { c.b.DType = dtype.BF16 }),
			"output rows":     with(func(c *call) { c.out.Rows = m }),
			"nil A":           with(func(c *call) { c.a.Ptr = 0 }),
			"A too small":     with(func(c *call) { c.a.Ptr = rb.a.Add(2) }),
			"output over A":   with(func(c *call) { c.out.Ptr = rb.a }),
			"output over C":   with(func(c *call) { c.out.Ptr = g.CBuffer().Ptr }),
		} {
			for _, mode := range []gemmrs.Mode{gemmrs.Overlap, gemmrs.Sequential} {
				if err := g.RunMode(ctx, mode, c.a, c.b, c.out, rb.s); !errors.Is(err, device.ErrInvalidArgument) {
					return fmt.Errorf("%s (%v): got %v, want ErrInvalidArgument", name, mode, err)
				}
			}
		}
		if _, err := g.LastGemmTime(); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Errorf("LastGemmTime before any call: %v", err)
		}
		// After all those rejections the context still works.
		if err := g.Run(ctx, a, b, out, rb.s); err != nil {
			return err
		}
		if err := rb.s.Synchronize(ctx); err != nil {
			return err
		}
		if d, err := g.LastGemmTime(); err != nil || d < 0 {
			return fmt.Errorf("LastGemmTime: %v, %v", d, err)
		}
		return nil
	})
	require.NoError(t, err)
}

// SplitAuto splits the first block for small KLocal on one node only; New
// reports what it picked.
func TestSplitAuto(t *testing.T) {
	one := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 5*time.Second)
	two := simWorld(t, bootstrap.Shape{Nodes: 2, LocalSize: 2}, 5*time.Second)
	for _, c := range []struct {
		w      *world.World
		kLocal int
		want   bool
	}{
		{one, gemmrs.SplitAutoMaxKLocal - 1, true},
		{one, gemmrs.SplitAutoMaxKLocal, false},
		{two, 8, false},
	} {
		err := c.w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
			g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dtype.BF16, 8, 4, c.kLocal))
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, g.Close()) }()
			if got := g.SplitsFirstBlock(); got != c.want {
				return fmt.Errorf("KLocal %d: split %v, want %v", c.kLocal, got, c.want)
			}
			return nil
		})
		require.NoError(t, err)
	}
}

func TestModeFor(t *testing.T) {
	w := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 5*time.Second)
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		cfg := baseConfig(dtype.BF16, 1024, 8, 4)
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		if got := g.ModeFor(1024); got != gemmrs.Sequential {
			return fmt.Errorf("2·1024·8·4 FLOP is far below the threshold: got %v", got)
		}
		g2, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		gemmrs.SetAutoThresholds(g2, 1000, 128)
		defer func() { err = errors.Join(err, g2.Close()) }()
		for m, want := range map[int]gemmrs.Mode{1024: gemmrs.Overlap, 256: gemmrs.Overlap, 254: gemmrs.Sequential, 2: gemmrs.Sequential} {
			if got := g2.ModeFor(m); got != want {
				return fmt.Errorf("ModeFor(%d) = %v, want %v", m, got, want)
			}
		}
		if g2.LastMode() != gemmrs.Auto {
			return fmt.Errorf("LastMode before any call: %v", g2.LastMode())
		}
		if g2.Config().Timeout == 0 {
			return fmt.Errorf("defaults not filled in: %+v", g2.Config())
		}
		return nil
	})
	require.NoError(t, err)
	// The products RESULTS measured (2026-11-28), M×N×KLocal over world
	// ranks, and the faster path there (a tie goes either way).
	for _, c := range []struct {
		m, n, kLocal, world int
		want                gemmrs.Mode
	}{
		{256, 8192, 4096, 2, gemmrs.Sequential},  // 1.7e10 FLOP per rank, 2 H200s
		{512, 8192, 4096, 2, gemmrs.Sequential},  // 3.4e10
		{1024, 8192, 4096, 2, gemmrs.Overlap},    // 6.9e10
		{4096, 8192, 1024, 2, gemmrs.Overlap},    // 6.9e10
		{1024, 8192, 2048, 4, gemmrs.Sequential}, // 3.4e10, 4 H100s
		{4096, 8192, 1024, 4, gemmrs.Sequential}, // 6.9e10
		{8192, 8192, 1024, 4, gemmrs.Overlap},    // 1.4e11
		{8192, 8192, 2048, 4, gemmrs.Overlap},    // 2.7e11
		{64, 8192, 65536, 2, gemmrs.Sequential},  // 64 rows per rank
		{8192, 8192, 8192, 1, gemmrs.Sequential}, // one rank
	} {
		require.Equal(t, c.want, gemmrs.AutoModeFor(c.m, c.n, c.kLocal, c.world), "%+v", c)
	}
	for _, s := range []string{"auto", "overlap", "sequential"} {
		m, err := gemmrs.ParseMode(s)
		require.NoError(t, err)
		require.Equal(t, s, m.String())
	}
	_, err = gemmrs.ParseMode("fused")
	require.Error(t, err)
}

// A traced overlapped call reports when each of its world blocks ended, in
// the order computed, within the GEMM's own time; the output is still
// exact. Without tracing there is nothing to report.
func TestTraceReportsEachBlock(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w := simWorld(t, shape, 10*time.Second)
	ws, m, n, k, dt := shape.World(), 8, 8, 8, dtype.F32
	ps := newProblems(dt, ws, m, n, k)
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
		rank := r.Comm.Rank()
		g, err := gemmrs.New(ctx, r.Comm, r.Dev, baseConfig(dt, m, n, k))
		if err != nil {
			return err
		}
		defer g.Close()
		rb, err := newRankBufs(r.Dev, dt, m, n, k, ws)
		if err != nil {
			return err
		}
		defer rb.close()
		if _, err := g.LastBlockEnds(); err == nil {
			return fmt.Errorf("LastBlockEnds before any traced call: no error")
		}
		if err := g.Trace(true); err != nil {
			return err
		}
		p := ps.get(0)
		got, err := runCall(ctx, g, rb, ps, p, rank, gemmrs.Overlap)
		if err != nil {
			return err
		}
		if _, err := ps.compare(p, rank, shape.Nodes, got); err != nil {
			return err
		}
		ends, err := g.LastBlockEnds()
		if err != nil {
			return err
		}
		total, err := g.LastGemmTime()
		if err != nil {
			return err
		}
		if len(ends) != ws {
			return fmt.Errorf("rank %d: %d block ends %v, want %d", rank, len(ends), ends, ws)
		}
		for i, e := range ends {
			if e <= 0 || e > total || (i > 0 && e < ends[i-1]) {
				return fmt.Errorf("rank %d: block ends %v out of order or outside the GEMM's %v", rank, ends, total)
			}
		}
		if err := g.Trace(false); err != nil {
			return err
		}
		if _, err := runCall(ctx, g, rb, ps, ps.get(1), rank, gemmrs.Overlap); err != nil {
			return err
		}
		if _, err := g.LastBlockEnds(); err == nil {
			return fmt.Errorf("LastBlockEnds after tracing was turned off: no error")
		}
		return nil
	})
	require.NoError(t, err)
}

// fp8 operands (Config.Input E4M3, B a [N, KLocal] weight) with per-tensor
// scales, overlapped (pushing the end of the last block after the GEMM on
// one node) and sequential, on 1×4 and 2×2: values of -1, 0 and 1 and
// scales 0.5 and 4 keep every product and sum exact in bf16, so the
// outputs (poisoned first) must equal the exact scaled sums bit for bit;
// then what RunScaled refuses.
func TestFP8Operands(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}} {
		for _, mode := range []gemmrs.Mode{gemmrs.Overlap, gemmrs.Sequential} {
			t.Run(fmt.Sprintf("%v/%v", shape, mode), func(t *testing.T) {
				t.Parallel()
				const rowsPer, n, k = 8, 24, 32
				ws := shape.World()
				m := rowsPer * ws
				value := func(rank, which, i int) float64 { return float64((rank*7+which*5+i*3)%3 - 1) }
				w := simWorld(t, shape, 10*time.Second)
				err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
					cfg := baseConfig(dtype.BF16, m, n, k)
					cfg.Input, cfg.Mode = dtype.E4M3, mode
					g, err := gemmrs.New(ctx, r.Comm, r.Dev, cfg)
					if err != nil {
						return err
					}
					defer func() { err = errors.Join(err, g.Close()) }()
					if got, why := g.GemmChoice(); got != gemmrs.GemmOwn {
						return fmt.Errorf("GEMM %v (%s): fp8 takes the own GEMM", got, why)
					}
					rank := r.Comm.Rank()
					ha, hb := make([]byte, m*k), make([]byte, n*k)
					for i := range ha {
						dtype.E4M3.Put(ha, i, value(rank, 0, i))
					}
					for i := range hb {
						dtype.E4M3.Put(hb, i, value(rank, 1, i))
					}
					scales := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5)), math.Float32bits(4))
					ptrs, release, err := onDevice(r.Dev, ha, hb, scales, check.Poison(dtype.BF16, rowsPer*n))
					if err != nil {
						return err
					}
					defer func() { err = errors.Join(err, release()) }()
					s, err := r.Dev.NewStream(device.Normal)
					if err != nil {
						return err
					}
					defer func() { err = errors.Join(err, s.Close()) }()
					a := gemmrs.Tensor{Ptr: ptrs[0], Rows: m, Cols: k, DType: dtype.E4M3}
					b := gemmrs.Tensor{Ptr: ptrs[1], Rows: n, Cols: k, DType: dtype.E4M3}
					out := gemmrs.Tensor{Ptr: ptrs[3], Rows: rowsPer, Cols: n, DType: dtype.BF16}
					sc := gemmrs.Scales{A: ptrs[2], B: ptrs[2].Add(4)}
					if err := g.RunScaled(ctx, a, b, sc, out, s); err != nil {
						return err
					}
					if err := s.Synchronize(ctx); err != nil {
						return err
					}
					got := make([]byte, rowsPer*n*2)
					if err := r.Dev.CopyToHost(got, out.Ptr); err != nil {
						return err
					}
					for i := 0; i < rowsPer; i++ {
						for j := 0; j < n; j++ {
							want := 0.0
							for q := 0; q < ws; q++ {
								for kk := 0; kk < k; kk++ {
									want += value(q, 0, (rank*rowsPer+i)*k+kk) * value(q, 1, j*k+kk)
								}
							}
							if v := dtype.BF16.Get(got, i*n+j); v != 2*want {
								return fmt.Errorf("rank %d: out[%d, %d] = %g, want %g", rank, i, j, v, 2*want)
							}
						}
					}
					for name, x := range map[string]struct{ a, b gemmrs.Tensor }{
						"bf16 operands":        {gemmrs.Tensor{Ptr: a.Ptr, Rows: m, Cols: k, DType: dtype.BF16}, b},
						"B as [K, N]":          {a, gemmrs.Tensor{Ptr: b.Ptr, Rows: k, Cols: n, DType: dtype.E4M3}},
						"K of 8 bytes per row": {gemmrs.Tensor{Ptr: a.Ptr, Rows: m, Cols: 8, DType: dtype.E4M3}, b},
					} {
						if err := g.RunScaled(ctx, x.a, x.b, sc, out, s); !errors.Is(err, device.ErrInvalidArgument) {
							return fmt.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
						}
					}
					// A scale that is not device memory is refused before
					// anything is enqueued: the GEMM stream stays usable.
					if err := g.RunScaled(ctx, a, b, gemmrs.Scales{A: 0x1000, B: sc.B}, out, s); !errors.Is(err, device.ErrInvalidArgument) {
						return fmt.Errorf("a scale that is not device memory: got %v, want ErrInvalidArgument", err)
					}
					if err := g.RunScaled(ctx, a, b, sc, out, s); err != nil {
						return fmt.Errorf("the valid call after a bad scale: %w", err)
					}
					if err := s.Synchronize(ctx); err != nil {
						return fmt.Errorf("the valid call after a bad scale: %w", err)
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

// onDevice allocates a buffer on dev for each of datas and copies it there;
// release frees them (on an error they are freed here).
func onDevice(dev device.Device, datas ...[]byte) (ptrs []device.Ptr, release func() error, err error) {
	release = func() error {
		var errs []error
		for _, p := range ptrs {
			errs = append(errs, dev.Free(p))
		}
		return errors.Join(errs...)
	}
	for _, data := range datas {
		p, err := dev.Alloc(int64(len(data)))
		if err != nil {
			return nil, nil, errors.Join(err, release())
		}
		ptrs = append(ptrs, p)
		if err := dev.CopyToDevice(p, data); err != nil {
			return nil, nil, errors.Join(err, release())
		}
	}
	return ptrs, release, nil
}

// SumsManyBlocks: on and off as asked; auto where the GEMM outlasts the
// copies (KLocal from SumAutoMinKLocal) over a block of SumAutoMinRows
// rows or more.
func TestSumsManyBlocks(t *testing.T) {
	k, r := gemmrs.SumAutoMinKLocal, gemmrs.SumAutoMinRows
	for _, tc := range []struct {
		s            gemmrs.Split
		kLocal, rows int
		want         bool
	}{
		{gemmrs.SplitOn, 16, 128, true}, {gemmrs.SplitOff, 4 * k, 4 * r, false},
		{gemmrs.SplitAuto, k, r, true}, {gemmrs.SplitAuto, k - 1, r, false}, {gemmrs.SplitAuto, k, r - 1, false},
		{gemmrs.SplitAuto, 7168, 512, false}, {gemmrs.SplitAuto, 2048, 2048, false}, {gemmrs.SplitAuto, 3584, 4096, true},
	} {
		require.Equal(t, tc.want, gemmrs.SumsManyBlocks(tc.s, tc.kLocal, tc.rows), "%v k%d rows%d", tc.s, tc.kLocal, tc.rows)
	}
}
