// Package gemmrs is the row-parallel linear layer's output path: every rank
// multiplies its A [M, K_local] by its B [K_local, N] (bf16, fp16 or fp32,
// fp32 accumulation) and the [M, N] products are reduce-scattered over the
// ranks with ReduceScatter2D, giving each rank its [M/world, N] block of
// the sum. The GEMM and the communication overlap through signal words:
//
//	caller's stream s ──record──▶ GEMM stream: for d in ConsumptionOrder():
//	                                  C[rows of d] = A[rows of d] · B   (Matmul)
//	                                  signal[d] = call's value          (rs2d.Signals)
//	s: ReduceScatter2D(C → out)        each scatter copy of destination d waits,
//	                                  on the device, for signal[d]
//	s waits for the GEMM stream
//
// so the copy engine scatters the blocks already computed while the GEMM
// computes the next ones, in the order the scatter consumes them. That is
// the device's matmul (cuBLAS) block by block; hiercoll's own GEMM
// (gemm.Launch, own.go) does better where every rank can run it and
// measured it at least as fast as cuBLAS at the context's shape when New
// ran (Tuning.Gemm; GemmChoice): one launch computes all of C, its row
// tiles in consumption order, and raises the signal of each segment of a
// destination's rows (rs2d Signals.Segments) as soon as the segment's tiles
// are stored, so the copies start before a block is done and no GEMM is cut
// into blocks. With the block producer, where the copies set the pace (by
// default KLocal < 4096 on one node), the first block goes in two GEMMs
// with rs2d's early signal between them, so its first half is on its way
// half a block sooner. C is a buffer the GemmRS
// owns ([MaxM, N]); a call is checked and its signal value fixed by
// rs2d.Context.Prepare before anything is raised, so nothing is reset
// between calls and a failed call leaves nothing a later call could mistake
// for its own.
//
// For small problems the overlap cannot win (the GEMM is too short to hide
// the copy engine's latencies, and the copies cannot start before its first
// segment): Mode Auto then runs the GEMM whole and the reduce-scatter after
// it on the caller's stream (Sequential), by a second context of the
// default engine (the pull engine on nodes of 2 to 8 GPUs), whose symmetric
// input C is, so that it reads C where the GEMM wrote it. ModeFor says which
// a call of M rows takes, LastMode which the last call took. Every rank
// calls in the same mode (Auto's choice depends on M alone).
//
//	g, err := gemmrs.New(ctx, comm, dev, gemmrs.Config{MaxM: 8192, N: 8192, KLocal: 7168, DType: dtype.BF16})
//	defer g.Close()
//	err = g.Run(ctx, a, b, out, stream) // enqueued; stream.Synchronize(ctx) to wait
//
// The device must implement device.Matmul (the CPU backend does; the CUDA
// backend through cuBLAS, loaded at run time). On the CPU backend Auto
// takes the own GEMM's Go twin wherever it can compute the product.
//
// fp8: with Config.Input dtype.E4M3, A [M, KLocal] and B, a Linear weight
// [N, KLocal] (the tensor cores read fp8 operands K-major), are e4m3 and the
// output DType (bf16 or fp16); RunScaled passes their scales: per tensor,
// row-wise or block-wise (Scales, gemm.Scaling).
// Only the own GEMM computes fp8 (Hopper; the CPU backend's twin), so New
// fails with ErrNotSupported where it cannot run.
package gemmrs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/internal/producer"
	"github.com/seed12530e24/hiercoll/internal/sizes"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// Tensor is a row-major matrix in device memory (rs2d's).
type Tensor = rs2d.Tensor

// Mode is how a call runs.
type Mode int

// The modes.
const (
	// Auto picks Overlap or Sequential per call (see ModeFor).
	Auto Mode = iota
	// Overlap computes C block by block on the GEMM stream, raising each
	// block's signal, while the reduce-scatter scatters the blocks done.
	Overlap
	// Sequential computes C whole on the caller's stream, then
	// reduce-scatters it by the sequential calls' context (the default
	// engine, reading C in place). Every rank calls in the same mode.
	Sequential
)

func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Overlap:
		return "overlap"
	case Sequential:
		return "sequential"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode accepts the names String prints.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return Auto, nil
	case "overlap", "overlapped":
		return Overlap, nil
	case "sequential", "seq":
		return Sequential, nil
	}
	return Auto, fmt.Errorf("gemmrs: unknown mode %q (want auto, overlap or sequential)", s)
}

// Auto's thresholds (ModeFor).
const (
	// autoMinFLOPPerPeer, times the ranks less one, is the per-rank GEMM
	// work (2·M·N·K_local) below which Auto runs Sequential: the overlap's
	// own costs (the copy engine's latencies, its waits per peer) grow with
	// the peers. Measured (benchmarks/RESULTS.md, 2026-11-28): on 2 H200s
	// the GEMM then the sequential context's reduce-scatter was faster to
	// 3.4e10 FLOP per rank (or as fast) and slower from 6.9e10; on 4 H100s
	// faster to 3.4e10, as fast or faster at 6.9e10, slower at 1.4e11.
	autoMinFLOPPerPeer = 4e10
	// autoMinRowsPerRank is the M/world below which Auto runs Sequential:
	// a block's GEMM that small runs far below the GPU's rate.
	autoMinRowsPerRank = 128
)

// Config describes a GemmRS. MaxM, N, KLocal and DType are required.
type Config struct {
	// MaxM is the largest M a call may use; C and the reduce-scatter's
	// buffers are sized for it. It must be divisible by the world size.
	MaxM int
	// N is the number of columns of B, C and the output.
	N int
	// KLocal is this rank's share of the reduction dimension: A is
	// [M, KLocal], B is [KLocal, N]. Every rank uses the same KLocal.
	KLocal int
	// DType is the element type of A, B and the output: BF16, F16 or F32.
	DType dtype.DType
	// Input, when set, is A's and B's element type instead: dtype.E4M3
	// (fp8), with DType BF16 or F16 for the product and the output, and B
	// as [N, KLocal].
	Input dtype.DType
	// Mode is how Run runs (Auto by default).
	Mode Mode
	// Transport selects the reduce-scatter's inter-node transport.
	Transport internode.Kind
	// Timeout bounds host-side waits of New and Close (default 60 s).
	Timeout time.Duration
	// Graphs lets calls be captured in CUDA graphs and replayed, mixed
	// with calls made directly (rs2d.Config.Graphs, for both modes'
	// contexts); without it a call on a stream being captured is refused.
	// With it the SMs push nothing after the GEMM (Tuning.Help: the
	// context's Helps needs growing signals).
	Graphs bool
	// Tuning are the settings benchmarks sweep (zero: every default).
	Tuning Tuning
}

// SplitAutoMaxKLocal bounds the KLocal at which the first block is split by
// default. The cost of a block's GEMM grows with KLocal and the cost of its
// copy does not: below this the copies, not the GEMM, set the pace of an
// overlapped call, and starting them sooner is what shortens it (measured
// in benchmarks/RESULTS.md). With several nodes the rail sets the pace.
const SplitAutoMaxKLocal = 4096

// SumAutoMinKLocal and SumAutoMinRows bound where, by default, the own GEMM
// sums the own block on one node of three or more ranks (on two it always
// does): producer.SumsMany's bounds, which say why.
const (
	SumAutoMinKLocal = producer.SumMinKLocal
	SumAutoMinRows   = producer.SumMinRows
)

// SumsManyBlocks resolves Tuning.SumOwnBlock for a product of kLocal per
// rank and rowsPerRank rows per rank's block: whether the own GEMM sums the
// own block where the node has more than two ranks.
func SumsManyBlocks(s Split, kLocal, rowsPerRank int) bool {
	if s != SplitAuto {
		return s == SplitOn
	}
	return producer.SumsMany(kLocal, rowsPerRank)
}

// splitFor resolves the split of the first block for a world with every
// rank on one node (oneNode) or not.
func splitFor(s Split, kLocal int, oneNode bool) Split {
	if s != SplitAuto {
		return s
	}
	if kLocal < SplitAutoMaxKLocal && oneNode {
		return SplitOn
	}
	return SplitOff
}

func (c Config) validate(world int) error {
	k := c.Tuning
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemmrs: %s: %w", fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case c.MaxM <= 0 || c.N <= 0 || c.KLocal <= 0:
		return bad("MaxM=%d, N=%d and KLocal=%d must be positive", c.MaxM, c.N, c.KLocal)
	case c.MaxM%world != 0:
		return bad("MaxM=%d is not divisible by world size %d", c.MaxM, world)
	case c.Mode != Auto && c.Mode != Overlap && c.Mode != Sequential:
		return bad("unknown mode %v", c.Mode)
	case k.SplitFirstBlock < SplitAuto || k.SplitFirstBlock > SplitOn:
		return bad("unknown split %d", k.SplitFirstBlock)
	case k.SumOwnBlock < SplitAuto || k.SumOwnBlock > SplitOn:
		return bad("unknown choice %d for summing the own block", k.SumOwnBlock)
	case k.Gemm < GemmAuto || k.Gemm > GemmCuBLAS:
		return bad("unknown GEMM choice %d", k.Gemm)
	case k.Gemm == GemmOwn && k.SplitFirstBlock == SplitOn:
		return bad("the split first block is for the block-by-block GEMM, not the own GEMM, which signals in segments")
	}
	switch c.DType {
	case dtype.BF16, dtype.F16, dtype.F32:
	default:
		return fmt.Errorf("gemmrs: DType %v: the GEMM takes bf16, fp16 or fp32: %w", c.DType, device.ErrInvalidArgument)
	}
	switch {
	case c.Input != dtype.Invalid && c.Input != c.DType && c.Input != dtype.E4M3:
		return bad("Input %v: the GEMM's inputs are the DType's or e4m3", c.Input)
	case c.Input == dtype.E4M3 && c.DType == dtype.F32:
		return bad("e4m3 products go to bf16 or fp16, not fp32")
	case c.Input == dtype.E4M3 && (k.Gemm == GemmCuBLAS || k.SplitFirstBlock == SplitOn):
		return bad("e4m3 inputs take the own GEMM, not the device's matmul block by block")
	}
	// C is [MaxM, N], A at most [MaxM, KLocal], B [KLocal, N]: each must
	// fit before a size is computed from it.
	es := int64(c.DType.Size())
	for _, m := range []struct {
		what string
		a, b int64
	}{{"MaxM × N", int64(c.MaxM), int64(c.N)}, {"MaxM × KLocal", int64(c.MaxM), int64(c.KLocal)}, {"KLocal × N", int64(c.KLocal), int64(c.N)}} {
		if _, err := sizes.Bytes("gemmrs: "+m.what+" × element size", m.a, m.b, es); err != nil {
			return err
		}
	}
	return nil
}

// GemmRS owns what one rank needs for GEMM + ReduceScatter2D: the
// ReduceScatter2D context (built with OverlapWithGEMM), the C buffer, the
// GEMM stream and the events joining it to the caller's stream. Calls on
// one GemmRS are serialised.
type GemmRS struct {
	cfg   Config
	knobs Tuning // in effect: the split and the GEMM resolved
	// Auto's thresholds (autoMinFLOP, autoMinRowsPerRank; tests change
	// them).
	minFLOP float64
	minRows int
	comm    bootstrap.Comm
	dev     device.Device
	mm      device.Matmul
	world   int

	rs    *rs2d.Context
	order []int // rs.ConsumptionOrder(): the GEMM's block order
	// seq is the sequential calls' reduce-scatter (and ReduceScatter's):
	// a context of the default engine without GEMM overlap. C ([MaxM, N])
	// is seq's symmetric input where it has one (cOwned false), else a
	// buffer of the GemmRS's.
	seq    *rs2d.Context
	cBuf   device.Ptr
	cOwned bool
	// ovl is the own GEMM's overlapped producer (knobs.Gemm, own.go); why
	// it was chosen or not. The fields after it are ovl's, which the
	// device's matmul shares: its producer and GEMM stream; ready joins
	// the caller's stream into the GEMM stream (A and B are ready),
	// gemmDone joins the GEMM stream back, gemmStart and gemmEnd time the
	// GEMM part of the last call.
	ovl                                 *producer.Overlapped
	why                                 string
	producer                            *producer.Producer
	gemmStream                          device.Stream
	ready, gemmDone, gemmStart, gemmEnd device.Event
	// blockEnds, while tracing, are recorded after each block of an
	// overlapped call, in the order computed (nil when not tracing).
	blockEnds []device.Event
	traced    int  // blocks recorded by the last traced call
	ownTraced bool // the last overlapped call ran the own GEMM

	mu     sync.Mutex
	closed bool
	broken error // a call failed after raising signals: the context cannot go on
	last   Mode  // the mode of the last call (Auto: none yet)
	timed  bool  // gemmStart and gemmEnd were recorded by the last call
	hooks  *hooks
}

// hooks let tests perturb the producer (export_test.go).
type hooks struct {
	// order rearranges the overlapped GEMM's block order.
	order func([]int) []int
	// beforeBlock is called before block d's GEMM is enqueued on the GEMM
	// stream (to enqueue a delay there).
	beforeBlock func(gemm device.Stream, d int) error
	// signals, when set, replaces the GEMM stream's signal writes: it must
	// arrange for raise(s, d) on streams of its own for every block d, each
	// after gemmDone.
	signals func(gemmDone device.Event, raise func(s device.Stream, d int) error) error
}

// The hooks perturb the block-by-block producer: with hooks set, calls use
// it even where the own GEMM was chosen.

// New creates a GemmRS on every rank of comm (collective: every rank calls
// it with the same Config). Before the collective ReduceScatter2D context is
// built, each rank checks that its device can multiply (a 2×2 product
// against its known answer, which also loads cuBLAS on the CUDA backend) and
// the ranks agree on the outcome, so a rank without a GEMM fails New
// everywhere instead of hanging its peers later.
func New(ctx context.Context, comm bootstrap.Comm, dev device.Device, cfg Config) (*GemmRS, error) {
	world := comm.Size()
	knobs := cfg.Tuning
	if err := cfg.validate(world); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}

	g := &GemmRS{cfg: cfg, knobs: knobs, minFLOP: autoMinFLOP(world), minRows: autoMinRowsPerRank, comm: comm, dev: dev, world: world}
	if knobs.SplitFirstBlock == SplitOn && knobs.Gemm == GemmAuto {
		g.knobs.Gemm = GemmCuBLAS
		g.why = "the split first block asked for is the block producer's"
	}
	local := g.prepare(ctx)
	own := false
	if local == nil {
		var why string
		own, why, local = g.chooseGemm(ctx)
		if g.why == "" {
			g.why = why
		}
	}
	votes, err := bootstrap.Agree(ctx, comm, local, bootstrap.Vote(own))
	if err != nil {
		return nil, errors.Join(gemmUnusable(err), g.release())
	}
	g.knobs = g.resolve(votes)
	rsCfg := rs2d.Config{MaxM: cfg.MaxM, N: cfg.N, DType: cfg.DType, OverlapWithGEMM: true, Transport: cfg.Transport, Timeout: cfg.Timeout,
		Graphs: cfg.Graphs, Tuning: g.knobs.rs2dTuning()}
	rs, err := rs2d.New(ctx, comm, dev, rsCfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("gemmrs: %w", err), g.release())
	}
	g.rs = rs
	g.order = rs.ConsumptionOrder()
	if err := g.makeSequential(ctx, rsCfg); err != nil {
		return nil, errors.Join(fmt.Errorf("gemmrs: %w", err), g.Close())
	}
	return g, nil
}

// makeSequential makes the sequential calls' context
// (producer.SequentialConfig of the overlap context's rsCfg: Auto runs
// small products sequentially) and C: its symmetric input where it has one
// (a pull engine: then the sequential reduce-scatter copies nothing in),
// else a buffer of C's size.
func (g *GemmRS) makeSequential(ctx context.Context, rsCfg rs2d.Config) error {
	seq, err := rs2d.New(ctx, g.comm, g.dev, producer.SequentialConfig(rsCfg))
	if err != nil {
		return fmt.Errorf("the sequential calls' context: %w", err)
	}
	g.seq = seq
	if in, err := seq.Input(g.cfg.MaxM); err == nil {
		g.cBuf = in.Ptr
		return nil
	}
	size := (int64(g.cfg.MaxM)*int64(g.cfg.N)*int64(g.cfg.DType.Size()) + 3) &^ 3 // whole words, for PoisonC
	if g.cBuf, err = g.dev.Alloc(size); err != nil {
		return fmt.Errorf("C buffer of %d bytes: %w", size, err)
	}
	g.cOwned = true
	return nil
}

// resolve settles the knobs once every rank voted for the own GEMM or not:
// the own GEMM only if every rank can and would use it (it signals in
// segments, so the first block is not split); else the device's matmul,
// block by block.
func (g *GemmRS) resolve(votes [][]byte) Tuning {
	k := g.knobs
	if bootstrap.CountYes(votes) == len(votes) {
		k.Gemm = GemmOwn
		if k.ReduceScatter.Segments == 0 {
			k.ReduceScatter.Segments = producer.SegmentsFor(g.cfg.MaxM/g.world, g.world/g.comm.LocalSize(), g.comm.LocalSize())
		}
		k.SplitFirstBlock = SplitOff
		return k
	}
	if k.Gemm != GemmCuBLAS && g.why != "" && bootstrap.Yes(votes[g.comm.Rank()]) {
		g.why = "another rank cannot use the own GEMM or measured cuBLAS faster"
	}
	k.Gemm = GemmCuBLAS
	if k.ReduceScatter.Segments <= 1 { // segments asked for replace the split
		k.SplitFirstBlock = splitFor(k.SplitFirstBlock, g.cfg.KLocal, g.comm.LocalSize() == g.world)
	}
	return k
}

// prepare takes this rank's own resources and checks its GEMM.
func (g *GemmRS) prepare(ctx context.Context) error {
	var err error
	if g.mm, err = device.MatmulOf(g.dev); err != nil {
		return err
	}
	if g.ovl, err = producer.NewOverlapped(g.dev, g.world); err != nil {
		return err
	}
	g.gemmStream, g.producer = g.ovl.Stream(), g.ovl.Producer()
	g.ready, g.gemmDone, g.gemmStart, g.gemmEnd = g.ovl.Events()
	return selfTest(ctx, g.dev, g.mm, g.gemmStream, g.cfg.DType)
}

// selfTest multiplies [[1 2] [3 4]] by [[5 6] [7 8]] on s and checks the
// row-major product [[19 22] [43 50]] (exact in every supported dtype): a
// backend that swapped or transposed operands fails here, not in a
// collective.
func selfTest(ctx context.Context, dev device.Device, mm device.Matmul, s device.Stream, dt dtype.DType) (err error) {
	es := dt.Size()
	scratch, err := dev.Alloc(int64(12 * es))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dev.Free(scratch)) }()
	host := make([]byte, 12*es)
	for i, v := range []float64{1, 2, 3, 4, 5, 6, 7, 8} {
		dt.Put(host, i, v)
	}
	if err := dev.CopyToDevice(scratch, host[:8*es]); err != nil {
		return err
	}
	spec := device.GemmSpec{M: 2, N: 2, K: 2, A: scratch, B: scratch.Add(int64(4 * es)), C: scratch.Add(int64(8 * es)), DType: dt}
	if err := mm.Gemm(s, spec); err != nil {
		return err
	}
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	if err := dev.CopyToHost(host[8*es:], spec.C); err != nil {
		return err
	}
	var got []float64
	for i := 8; i < 12; i++ {
		got = append(got, dt.Get(host, i))
	}
	if want := []float64{19, 22, 43, 50}; fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("the device's GEMM self-test computed %v for [[1 2] [3 4]]·[[5 6] [7 8]], want %v (row-major)", got, want)
	}
	return nil
}

// gemmUnusable is the error of New when a rank's GEMM check failed (err from
// bootstrap.Agree): on the other ranks, it names each failed rank.
func gemmUnusable(err error) error {
	var pe *bootstrap.PeerError
	if !errors.As(err, &pe) {
		return fmt.Errorf("gemmrs: the GEMM is not usable here: %w", err)
	}
	failed := make([]string, len(pe.Ranks))
	for i, r := range pe.Ranks {
		failed[i] = fmt.Sprintf("rank %d: %s", r, pe.Reasons[i])
	}
	return fmt.Errorf("gemmrs: the GEMM is not usable on every rank (%s): %w", strings.Join(failed, "; "), err)
}

// Config returns the configuration in effect (defaults filled in).
func (g *GemmRS) Config() Config { return g.cfg }

// SplitsFirstBlock reports whether an overlapped call computes the first
// block in consumption order in two halves, with the early signal between
// them.
func (g *GemmRS) SplitsFirstBlock() bool { return g.knobs.SplitFirstBlock == SplitOn }

// ModeFor returns the mode a call of m rows runs in: Config.Mode unless it
// is Auto, which picks Sequential on one rank, when M/world is below
// its threshold or the per-rank GEMM (2·M·N·KLocal FLOP) is below its
// threshold (128 rows per rank; 4e10 FLOP per rank times the ranks less
// one: 4e10 on 2, 1.2e11 on 4), and Overlap otherwise. Every rank picks the
// same.
func (g *GemmRS) ModeFor(m int) Mode {
	if g.cfg.Mode != Auto {
		return g.cfg.Mode
	}
	return autoMode(m, g.cfg.N, g.cfg.KLocal, g.world, g.minFLOP, g.minRows)
}

// AutoModeFor is the mode Auto picks for a GEMM + RS of an [m, kLocal] by
// [kLocal, n] product per rank over world ranks (ModeFor's rule), for
// producers other than a GemmRS's (the C ABI's).
func AutoModeFor(m, n, kLocal, world int) Mode {
	return autoMode(m, n, kLocal, world, autoMinFLOP(world), autoMinRowsPerRank)
}

// autoMinFLOP is the per-rank GEMM work below which Auto runs Sequential
// over world ranks.
func autoMinFLOP(world int) float64 { return autoMinFLOPPerPeer * float64(max(1, world-1)) }

func autoMode(m, n, kLocal, world int, minFLOP float64, minRows int) Mode {
	flop := 2 * float64(m) * float64(n) * float64(kLocal)
	if world == 1 || m/world < minRows || flop < minFLOP {
		return Sequential
	}
	return Overlap
}

// LastMode returns the mode the last call ran in (Auto before any call).
func (g *GemmRS) LastMode() Mode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// CBuffer is the [MaxM, N] buffer the GEMM writes; a call of M rows uses its
// first M rows. It stays owned by the GemmRS.
func (g *GemmRS) CBuffer() Tensor {
	return Tensor{Ptr: g.cBuf, Rows: g.cfg.MaxM, Cols: g.cfg.N, DType: g.cfg.DType}
}

// ConsumptionOrder is the order in which the overlapped GEMM computes the
// destination ranks' blocks (the reduce-scatter's consumption order).
func (g *GemmRS) ConsumptionOrder() []int { return append([]int(nil), g.order...) }

// Trace turns stage tracing on or off for later overlapped calls: their
// reduce-scatter's (rs2d.Trace) and the end of each block of their GEMM
// (LastBlockEnds).
func (g *GemmRS) Trace(on bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	errs := []error{g.closeBlockEnds()}
	if on {
		for range g.world {
			e, err := g.dev.NewTimedEvent()
			if err != nil {
				errs = append(errs, err)
				break
			}
			g.blockEnds = append(g.blockEnds, e)
		}
	}
	return errors.Join(append(errs, g.rs.Trace(on))...)
}

// closeBlockEnds closes the block-end events and forgets the traced call.
func (g *GemmRS) closeBlockEnds() error {
	var errs []error
	for _, e := range g.blockEnds {
		errs = append(errs, e.Close())
	}
	g.blockEnds, g.traced = nil, 0
	return errors.Join(errs...)
}

// LastStages returns the reduce-scatter's stage ends of the last traced
// overlapped call (rs2d.LastStages; sequential calls are not traced);
// synchronize its stream first.
func (g *GemmRS) LastStages() (rs2d.Stages, error) { return g.rs.LastStages() }

// LastBlockEnds returns, for the last traced overlapped call, when each
// block's GEMM ended (in the order computed, ConsumptionOrder), from the
// start of its first block; with the own GEMM (one launch), when it ended.
// Synchronize the call's stream first.
func (g *GemmRS) LastBlockEnds() ([]time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ownTraced && g.blockEnds != nil {
		d, err := g.gemmEnd.Since(g.gemmStart)
		return []time.Duration{d}, err // one launch: its end
	}
	if g.traced == 0 {
		return nil, fmt.Errorf("gemmrs: no traced overlapped call to report: %w", device.ErrInvalidArgument)
	}
	ends := make([]time.Duration, g.traced)
	for i, e := range g.blockEnds[:g.traced] {
		d, err := e.Since(g.gemmStart)
		if err != nil {
			return nil, err
		}
		ends[i] = d
	}
	return ends, nil
}

// LastGemmTime returns how long the GEMM part of the last call took on the
// device: on the GEMM stream from the start of its first block to the end
// of its last for Overlap (so it includes any slowdown from the
// communication beside it), on the caller's stream for Sequential and Gemm.
// The call must have completed (synchronize its stream first).
func (g *GemmRS) LastGemmTime() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.timed {
		return 0, fmt.Errorf("gemmrs: no call to time yet: %w", device.ErrInvalidArgument)
	}
	return g.gemmEnd.Since(g.gemmStart)
}

// Close releases the GemmRS. It is collective (the reduce-scatter context's
// Close is): every rank calls it. Work still queued is waited for, bounded
// by Config.Timeout.
func (g *GemmRS) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	if g.rs != nil {
		errs = append(errs, g.rs.Close())
		g.rs = nil
	}
	if g.gemmStream != nil {
		ctx, cancel := context.WithTimeout(context.Background(), g.cfg.Timeout)
		defer cancel()
		if err := g.gemmStream.Synchronize(ctx); err != nil {
			errs = append(errs, fmt.Errorf("gemmrs: close: draining the GEMM stream: %w", err))
		}
	}
	if g.seq != nil { // after the GEMM stream, which may still write C into seq's heap
		errs = append(errs, g.seq.Close())
		g.seq = nil
		if !g.cOwned {
			g.cBuf = 0
		}
	}
	return errors.Join(append(errs, g.release())...)
}

// release frees what prepare took.
func (g *GemmRS) release() error {
	var errs []error
	if g.cBuf != 0 && g.cOwned {
		errs = append(errs, g.dev.Free(g.cBuf))
	}
	g.cBuf, g.cOwned = 0, false
	if g.ovl != nil {
		errs = append(errs, g.ovl.Close())
		g.ovl = nil
	}
	g.gemmStream, g.ready, g.gemmDone, g.gemmStart, g.gemmEnd, g.producer = nil, nil, nil, nil, nil, nil
	errs = append(errs, g.closeBlockEnds())
	return errors.Join(errs...)
}

// PoisonC enqueues on s the filling with NaNs of the first m rows of C and
// of the rows this rank receives from its node peers in a call of m rows,
// so that a call that reads rows before the GEMM wrote them shows as NaN
// in the output (for checks). Enqueue it on the stream of the next call.
func (g *GemmRS) PoisonC(s device.Stream, m int) error {
	bytes := int64(m) * int64(g.cfg.N) * int64(g.cfg.DType.Size())
	if err := g.dev.Memset32(s, g.cBuf, check.PoisonWord(g.cfg.DType), (bytes+3)/4); err != nil { // C is allocated in whole words
		return err
	}
	return g.rs.PoisonReceive(s, m, check.PoisonWord(g.cfg.DType))
}
