package gemm

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/sizes"
)

//go:embed gemm.cu
var gemmSource string

// module is the CUDA source of hiercoll's own GEMM: Hopper only (wgmma,
// TMA, setmaxnreg), so it is compiled for sm_90a.
//
// Inputs and outputs: bf16 or fp16 in and out (B [K, N] or [N, K]), or fp8
// e4m3 in with per-tensor, row-wise or block-wise scales (Scaling) and bf16
// or fp16 out (B [N, K] only: the tensor cores read 8-bit operands K-major,
// as cuBLASLt's fp8 GEMMs do).
var module = &device.Module{Name: "hiercoll_gemm", Source: gemmSource, Arch: "sm_90a"}

// The GEMM's tile: TileM × tileN outputs per CTA step, tileK
// deep per pipeline stage for 16-bit inputs (tileKOf: 128 for fp8; a
// stage's rows are 128 bytes either way).
const (
	TileM = 128
	tileN = 256
	tileK = 64

	gemmThreads = 384
	gemmStages  = 4
	// sumQueue is how many summed tiles' sums the storer queues while the
	// other blocks' rows have not landed (GM_QUEUE, after its head, a
	// barrier's parity, its tail and the storer's count of tiles); an
	// entry names a tile's row tile in 16 bits and its column tile in 12.
	sumQueue         = 32
	sumQueueRowTiles = 1 << 16
	sumQueueColTiles = 1 << 12
	// blockScaleBBytes holds the block-wise scales of B the kernel's scale
	// loader brings beside its stages (GM_BSLOTS: two per slot).
	blockScaleBBytes = 32
	gemmShared       = gemmStages*(TileM*tileK*2+tileN*tileK*2) + TileM/2*tileN*2 + 1024 + (2*gemmStages+8)*8 + (TileM+tileN)*4 + blockScaleBBytes + (sumQueue+4)*4

	// DefaultGroup is how many row tiles the walk takes at a time (see
	// Params.Group).
	DefaultGroup = 8
)

// GroupFor is the walk's group (Params.Group) for a product whose signal
// segments have segRows rows each: the largest count of row tiles up to
// DefaultGroup that divides a segment's row tiles, so that no group spans
// two segments. A group's tiles finish together: one that spans two
// segments holds the first one's signal until the second is nearly done
// (with segments of 512 rows, groups of 8 row tiles raised the signals of
// two destinations' blocks at once, the last one's only at the GEMM's end).
func GroupFor(segRows int) int {
	tiles := max(1, segRows/TileM)
	for g := min(DefaultGroup, tiles); g > 1; g-- {
		if tiles%g == 0 {
			return g
		}
	}
	return 1
}

// gemmStreamKMin is the fewest k tiles per CTA for which the last wave
// goes stream-K: below it the partial sums cost more than the idle CTAs
// they replace (benchmarks/RESULTS.md, stream-K). A variable for the tests.
var gemmStreamKMin int64 = 24

// layout is how B lies in memory: BNK with BT.
func (g Params) layout() BLayout {
	if g.BT {
		return BNK
	}
	return BKN
}

// BLayout is how B lies in memory (BNK is device.GemmSpec.BT), as flags
// and tables name it.
type BLayout int

// The layouts of B.
const (
	BKN BLayout = iota // [K, N] row-major
	BNK                // [N, K] row-major: a torch Linear weight
)

func (l BLayout) String() string {
	if l == BNK {
		return "nk"
	}
	return "kn"
}

// tileKOf is the GEMM's k tile for inputs of dt: 128 bytes of a row.
func tileKOf(dt dtype.DType) int {
	if dt == dtype.E4M3 {
		return 128
	}
	return tileK
}

// gemmKey picks a kernel: the input and output dtypes, B's layout, tma:
// whether C is stored with TMA (16-byte aligned rows), else straight from
// registers, and the scaling of e4m3 inputs (PerTensor for the others).
type gemmKey struct {
	in, out dtype.DType
	layout  BLayout
	tma     bool
	scaling Scaling
}

// gemmKernels is the table Launch and Prepare take the kernels from.
var gemmKernels = kernelTable(module)

// kernelTable is every kernel of m (gemm.cu or, in an A/B test, a variant
// of it) by its key. Kernel names: hc_gemm_<in>[_<out>]_<layout>
// [_row|_block][_odd], as gemm.cu instantiates them.
func kernelTable(m *device.Module) map[gemmKey]*device.Kernel {
	table := map[gemmKey]*device.Kernel{}
	add := func(in, out dtype.DType, layout BLayout, scaling Scaling) {
		for _, tma := range []bool{true, false} {
			name := fmt.Sprintf("hc_gemm_%v_%v", in, layout)
			if in != out {
				name = fmt.Sprintf("hc_gemm_%v_%v_%v", in, out, layout)
			}
			if scaling != PerTensor {
				name += "_" + scaling.String()
			}
			if !tma {
				name += "_odd"
			}
			table[gemmKey{in, out, layout, tma, scaling}] = &device.Kernel{
				Module: m, Name: name, Block: gemmThreads, Shared: gemmShared, Host: gemmHost(in, out, layout, scaling),
			}
		}
	}
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		add(dt, dt, BKN, PerTensor)
		add(dt, dt, BNK, PerTensor)
		for _, sc := range []Scaling{PerTensor, RowWise, BlockWise} {
			add(dtype.E4M3, dt, BNK, sc)
		}
	}
	return table
}

// Segment is a row range [R0, R1) of C whose signal word Signal the
// GEMM sets to Params.Value once every tile meeting it is stored.
type Segment struct {
	R0, R1 int
	Signal device.Ptr
}

// Params is one launch of the own GEMM: the product C = A·B as every GEMM
// describes it (device.GemmSpec: A [M, K] row-major, B [K, N] row-major or,
// with BT, [N, K]; leading dimensions in elements, 0: dense; DType is A's
// and B's element type, here bf16, fp16 or e4m3 with BT; SMs is not used,
// Grid bounds the CTAs), fp32 accumulation, C rounded once, and what only
// this kernel takes.
type Params struct {
	device.GemmSpec
	// Out is C's element type: bf16 or fp16, DType's where 0 (e4m3 needs
	// one).
	Out dtype.DType
	// Scaling is how ScaleA and ScaleB apply to e4m3 inputs (PerTensor
	// for the others).
	Scaling Scaling
	// ScaleA and ScaleB, for e4m3 inputs, are device fp32 scales laid out
	// as Scaling says: per tensor each one fp32 (0: 1), C =
	// ScaleA·ScaleB·(A·B), as torch._scaled_mm's per-tensor scales; row-
	// and block-wise arrays (both needed).
	ScaleA, ScaleB device.Ptr
	// Grid is the CTAs (0: one per SM, at most one per tile).
	Grid int
	// Order is a device array of rowTilesOf(M) int32: the order in which
	// the walk takes C's row tiles (0: top to bottom). Group is how many
	// of them it takes at a time, walking their column tiles slowest, so
	// that a wave of CTAs shares A's and B's tiles in L2 (0: the default).
	Order device.Ptr
	Group int
	// Signals: Segments is a device array of NSegs records as Tables
	// writes them, Counters NSegs words, zero before the first launch (the
	// GEMM leaves them zero again), Value what completed segments raise.
	Segments, Counters device.Ptr
	NSegs              int
	Value              uint32
	// Sum, where Rows > 0, has the epilogue reduce rows of C instead of
	// storing them (see Sum).
	Sum Sum
	// Workspace, from NewWorkspace, lets the last wave go stream-K
	// (the kernel's comment says how): where the tiles do not divide
	// among the CTAs, the last ones are shared out by k. 0: whole tiles
	// only. One launch at a time may use a workspace.
	Workspace device.Ptr
}

// Sum is a reduce-scatter's reduction of one block done in the GEMM's
// epilogue: the rows [R0, R0+Rows) of C are not stored to C; each tile of
// them, rounded to C's dtype, is stored to Dst (row R0 of C being Dst's row
// 0), and once the other blocks' same rows have landed, the GEMM's storer
// brings them into shared memory and adds them to Dst block by block
// (TMA's reduce, in L2, each add rounded to C's dtype, in SumInTurn's
// order; with two blocks that one rounding of their exact sum has the bits
// of kernels.LaunchReduce over them; with more, a rounding per other
// block, as a ring's reduce-scatter rounds per hop). The tiles of those
// rows are the walk's last (Order); a tile whose other rows have not
// landed has its sums queued (sumQueue tiles at most), each block added as
// its rows land or after the CTA's last tile (each tile signalled after
// its sums), so the consumers do not wait for a peer.
type Sum struct {
	R0, Rows int        // R0 a multiple of TileM; Rows too, or R0+Rows = M
	Dst      device.Ptr // Rows × N, rows LDD elements apart (0: N)
	LDD      int64
	// Src holds the blocks: block k at Src + k·Stride elements (a multiple
	// of N), rows of N elements; block Self is C's own rows (Src's is not
	// read).
	Src          device.Ptr
	Stride       int64
	Blocks, Self int
	// Arrivals are Blocks words: the rows of segment j (SegRows rows each)
	// of block k have landed once word k reaches Base+j+1 (compared
	// cyclically, as the signal words' stream waits do).
	Arrivals device.Ptr
	Base     uint32
	SegRows  int
}

// MaxSumBlocks bounds a Sum's blocks: the ranks of one node.
const MaxSumBlocks = 8

// dense fills LDD.
func (s Sum) dense(n int) Sum {
	if s.LDD == 0 {
		s.LDD = int64(n)
	}
	return s
}

// dMap is the tensor map of a Sum's Dst, stored in C's boxes.
func (g Params) dMap() device.TensorMap {
	d := g.cMap()
	d.Base, d.Rows, d.RowBytes = g.Sum.Dst, int64(g.Sum.Rows), g.Sum.LDD*int64(g.Out.Size())
	return d
}

// sMap is the tensor map of a Sum's blocks, loaded in C's boxes: one
// matrix whose row k·Stride/N + r is block k's row r.
func (g Params) sMap() device.TensorMap {
	d, s := g.cMap(), g.Sum
	d.Base, d.RowBytes = s.Src, int64(g.N)*int64(g.Out.Size())
	d.Rows = int64(s.Blocks-1)*(s.Stride/int64(g.N)) + int64(s.Rows)
	return d
}

// checkSum checks g.Sum (g dense): ErrInvalidArgument for what no GEMM
// could do, ErrNotSupported where C or Dst cannot be stored with TMA (the
// sums are stored so).
func (g Params) checkSum() error {
	s := g.Sum
	if s.Rows == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemm: sum of rows [%d, %d) of %d: %s: %w", s.R0, s.R0+s.Rows, g.M, fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case s.Rows < 0 || s.R0 < 0 || s.R0+s.Rows > g.M:
		return bad("rows outside C")
	case s.R0%TileM != 0 || (s.Rows%TileM != 0 && s.R0+s.Rows != g.M):
		return bad("rows must be whole row tiles of %d", TileM)
	case s.Blocks < 1 || s.Self < 0 || s.Self >= s.Blocks || s.SegRows <= 0 || s.Stride < 0 || s.Stride%int64(g.N) != 0:
		return bad("%d blocks, own %d, segments of %d rows, stride %d", s.Blocks, s.Self, s.SegRows, s.Stride)
	case s.Dst == 0 || s.Arrivals == 0 || (s.Blocks > 1 && s.Src == 0):
		return bad("nil destination, arrivals or blocks")
	case s.LDD < int64(g.N):
		return bad("destination rows shorter than N")
	}
	if err := g.cMap().Check(); err != nil {
		return fmt.Errorf("gemm: sum: C is not stored with TMA (%v): %w", err, device.ErrNotSupported)
	}
	if err := g.dMap().Check(); err != nil || g.N%8 != 0 {
		return fmt.Errorf("gemm: sum: the destination cannot be stored with TMA or N=%d is not a multiple of 8 (%v): %w", g.N, err, device.ErrNotSupported)
	}
	if rowTilesOf(g.M) > sumQueueRowTiles || colTilesOf(g.N) > sumQueueColTiles {
		return fmt.Errorf("gemm: sum: %dx%d has more than %d row tiles or %d column tiles (the storer's queue names no more): %w",
			g.M, g.N, sumQueueRowTiles, sumQueueColTiles, device.ErrNotSupported)
	}
	if s.Blocks > MaxSumBlocks {
		return fmt.Errorf("gemm: sum of %d blocks: the GEMM sums %d at most: %w", s.Blocks, MaxSumBlocks, device.ErrNotSupported)
	}
	if err := g.sMap().Check(); s.Blocks > 1 && err != nil {
		return fmt.Errorf("gemm: sum: the blocks cannot be loaded with TMA (%v): %w", err, device.ErrNotSupported)
	}
	return nil
}

// gemmMaxStreamKGrid bounds the CTAs of a stream-K launch: the
// workspace's head holds one flag word for each, at a fixed size, so that
// launches of any grid find their flags where an earlier launch left them
// down (and never in another's partial sums).
const (
	gemmMaxStreamKGrid = 1024
	gemmFlagsBytes     = 4 * gemmMaxStreamKGrid
)

// WorkspaceBytes is the size of a workspace for launches of at most
// grid CTAs: the flags, and one fp32 tile of partial sums per CTA.
func WorkspaceBytes(grid int) int64 {
	return gemmFlagsBytes + int64(grid)*TileM*tileN*4
}

// NewWorkspace allocates a workspace for launches on dev (one CTA per
// SM at most) with its flags down, as the kernel leaves them.
func NewWorkspace(dev device.Device) (device.Ptr, error) {
	grid := dev.Info().SMs
	p, err := dev.Alloc(WorkspaceBytes(grid))
	if err != nil {
		return 0, err
	}
	if err := dev.CopyToDevice(p, make([]byte, gemmFlagsBytes)); err != nil {
		return 0, errors.Join(err, dev.Free(p))
	}
	return p, nil
}

// rowTilesOf is the number of row tiles of an M-row product.
func rowTilesOf(m int) int { return (m + TileM - 1) / TileM }

// colTilesOf is the number of column tiles of an N-column product.
func colTilesOf(n int) int { return (n + tileN - 1) / tileN }

// gemmSegmentRecord is the size of one segment record on the device:
// int32 r0, r1; uint32 need, pad; uint64 signal.
const gemmSegmentRecord = 24

// Tables returns, for an M × N product signalling segs (in the order a
// consumer takes them), the row-tile order (as int32 bytes, for
// Params.Order: the row tiles of each segment in turn, then any others) and
// the segment records (for Params.Segments), followed by the segments each
// row tile meets (int32: rowTilesOf(m)+1 offsets, then the indices).
func Tables(m, n int, segs []Segment) (order, records []byte) {
	rowTiles, colTiles := rowTilesOf(m), colTilesOf(n)
	seen := make([]bool, rowTiles)
	add := func(rt int) {
		if !seen[rt] {
			seen[rt] = true
			order = binary.LittleEndian.AppendUint32(order, uint32(rt))
		}
	}
	for _, s := range segs {
		need := 0
		for rt := 0; rt < rowTiles; rt++ {
			if rt*TileM < s.R1 && s.R0 < (rt+1)*TileM {
				add(rt)
				need++
			}
		}
		records = binary.LittleEndian.AppendUint32(records, uint32(s.R0))
		records = binary.LittleEndian.AppendUint32(records, uint32(s.R1))
		records = binary.LittleEndian.AppendUint32(records, uint32(need*colTiles))
		records = binary.LittleEndian.AppendUint32(records, 0)
		records = binary.LittleEndian.AppendUint64(records, uint64(s.Signal))
	}
	for rt := 0; rt < rowTiles; rt++ {
		add(rt)
	}
	// Each row tile's segments, for the kernel's signals: offsets, then
	// indices.
	var index []int
	offsets := make([]int, 0, rowTiles+1)
	for rt := 0; rt < rowTiles; rt++ {
		offsets = append(offsets, len(index))
		for i, s := range segs {
			if rt*TileM < s.R1 && s.R0 < (rt+1)*TileM {
				index = append(index, i)
			}
		}
	}
	offsets = append(offsets, len(index))
	for _, v := range append(offsets, index...) {
		records = binary.LittleEndian.AppendUint32(records, uint32(v))
	}
	return order, records
}

func (g Params) dense() Params {
	if g.Out == dtype.Invalid && g.DType != dtype.E4M3 {
		g.Out = g.DType
	}
	g.GemmSpec = g.Dense()
	if g.Group <= 0 {
		g.Group = DefaultGroup
	}
	g.Sum = g.Sum.dense(g.N)
	return g
}

// maps are the tensor maps of A and B: the kernel loads A in 128 × kt
// boxes, B in 256 × kt ([N, K]) or kt × 64 ([K, N]) boxes, kt the k tile.
func (g Params) maps() (a, b device.TensorMap) {
	es, kt := int64(g.DType.Size()), tileKOf(g.DType)
	a = device.TensorMap{Base: g.A, DType: g.DType, Cols: int64(g.K), Rows: int64(g.M), RowBytes: int64(g.LDA) * es,
		BoxCols: kt, BoxRows: TileM}
	b = device.TensorMap{Base: g.B, DType: g.DType, Cols: int64(g.K), Rows: int64(g.N), RowBytes: int64(g.LDB) * es,
		BoxCols: kt, BoxRows: tileN}
	if !g.BT {
		b = device.TensorMap{Base: g.B, DType: g.DType, Cols: int64(g.N), Rows: int64(g.K), RowBytes: int64(g.LDB) * es,
			BoxCols: 64, BoxRows: kt}
	}
	return a, b
}

// cMap is the tensor map of C, stored in 64 × 64 boxes.
func (g Params) cMap() device.TensorMap {
	es := int64(g.Out.Size())
	return device.TensorMap{Base: g.C, DType: g.Out, Cols: int64(g.N), Rows: int64(g.M), RowBytes: int64(g.LDC) * es,
		BoxCols: 64, BoxRows: 64}
}

// Check reports whether Launch can run g: the sizes, the dtype, and
// what TMA needs of A and B (16-byte aligned bases and row strides: K and,
// for [K, N], N multiples of 8 when dense); it wraps ErrNotSupported for
// what only this GEMM cannot do (a caller then uses another).
func (g Params) Check() error {
	g = g.dense()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gemm: gemm %dx%dx%d: %s: %w", g.M, g.N, g.K, fmt.Sprintf(format, args...), device.ErrInvalidArgument)
	}
	switch {
	case g.M <= 0 || g.N <= 0 || g.K <= 0 || g.M > math.MaxInt32 || g.N > math.MaxInt32 || g.K > math.MaxInt32:
		return bad("sizes must be positive 32-bit integers")
	case g.A == 0 || g.B == 0 || g.C == 0:
		return bad("nil matrix pointer")
	case g.LDA < g.K || g.LDC < g.N || (g.BT && g.LDB < g.K) || (!g.BT && g.LDB < g.N):
		return bad("leading dimensions shorter than the rows")
	case g.NSegs < 0 || (g.NSegs > 0 && (g.Segments == 0 || g.Counters == 0)):
		return bad("%d segments without their tables", g.NSegs)
	case g.Grid < 0:
		return bad("negative grid")
	case g.DType == dtype.E4M3 && g.Out == dtype.Invalid:
		return bad("e4m3 inputs need an output dtype (bf16 or fp16)")
	case g.DType != dtype.E4M3 && (g.ScaleA != 0 || g.ScaleB != 0):
		return bad("scales are for e4m3 inputs, not %v", g.DType)
	}
	if err := g.checkScales(); err != nil {
		return err
	}
	if err := g.checkSum(); err != nil {
		return err
	}
	if g.DType == dtype.E4M3 && !g.BT {
		return fmt.Errorf("gemm: gemm of e4m3: B must be [N, K] (K-major; the tensor cores read 8-bit operands so): %w", device.ErrNotSupported)
	}
	if _, ok := gemmKernels[gemmKey{g.DType, g.Out, g.layout(), true, g.Scaling}]; !ok {
		return fmt.Errorf("gemm: gemm of %v to %v: only bf16 and fp16 in and out, or e4m3 to either: %w", g.DType, g.Out, device.ErrNotSupported)
	}
	a, b := g.maps()
	if err := a.Check(); err != nil {
		return fmt.Errorf("gemm: gemm: A: %w", err)
	}
	if err := b.Check(); err != nil {
		return fmt.Errorf("gemm: gemm: B: %w", err)
	}
	return nil
}

// CheckMemory reports whether every operand g names lies, whole, in one
// allocation on dev (own memory or a peer view, as the driver reports it):
// A, B and C with their leading dimensions, the scales (one fp32 each per
// tensor, the arrays ScaleCounts says row-wise and block-wise), the tables and
// counters, and a workspace of the size its launch may use. Each operand is
// checked before anything is enqueued, so that a pointer to too little
// memory is this call's ErrInvalidArgument and not a fault on the stream.
// g must pass Check.
func (g Params) CheckMemory(dev device.Device) error {
	g = g.dense()
	in, out := int64(g.DType.Size()), int64(g.Out.Size())
	bRows, bCols := int64(g.K), int64(g.N)
	if g.BT {
		bRows, bCols = bCols, bRows
	}
	grid := g.Grid
	if grid == 0 {
		grid = dev.Info().SMs
	}
	grid = max(1, min(grid, rowTilesOf(g.M)*colTilesOf(g.N), gemmMaxStreamKGrid))
	scalesA, scalesB := 1, 1 // per tensor: one fp32 each
	if g.Scaling != PerTensor {
		scalesA, scalesB = ScaleCounts(g.Scaling, g.M, g.N, g.K)
	}
	matrices := []struct {
		what                  string
		rows, cols, ld, bytes int64
	}{{"A", int64(g.M), int64(g.K), int64(g.LDA), in}, {"B", bRows, bCols, int64(g.LDB), in}, {"C", int64(g.M), int64(g.N), int64(g.LDC), out}}
	extent := make([]int64, len(matrices))
	for i, m := range matrices {
		var ok bool
		if extent[i], ok = matrixBytes(m.rows, m.cols, m.ld, m.bytes); !ok {
			return fmt.Errorf("gemm: %dx%dx%d: %s of %d rows %d elements apart spans more than 2^50 bytes: %w",
				g.M, g.N, g.K, m.what, m.rows, m.ld, device.ErrInvalidArgument)
		}
	}
	for _, op := range []struct {
		what  string
		p     device.Ptr
		bytes int64
	}{
		{"A", g.A, extent[0]},
		{"B", g.B, extent[1]},
		{"C", g.C, extent[2]},
		{"scales of A", g.ScaleA, 4 * int64(scalesA)},
		{"scales of B", g.ScaleB, 4 * int64(scalesB)},
		{"row-tile order", g.Order, 4 * int64(rowTilesOf(g.M))},
		{"segment records", g.Segments, gemmSegmentRecord * int64(g.NSegs)},
		{"segment counters", g.Counters, 4 * int64(g.NSegs)},
		{"workspace", g.Workspace, WorkspaceBytes(grid)},
	} {
		if op.p == 0 {
			continue // absent (A, B and C are not: Check)
		}
		if err := device.CheckRange(dev, op.p, op.bytes); err != nil {
			return fmt.Errorf("gemm: %dx%dx%d: %s: %w", g.M, g.N, g.K, op.what, err)
		}
	}
	return g.Sum.checkMemory(dev, g.N, int64(g.Out.Size()))
}

// checkMemory checks that Dst, the blocks and the arrival words lie in
// allocations (a sum of rows of n elements of es bytes).
func (s Sum) checkMemory(dev device.Device, n int, es int64) error {
	if s.Rows == 0 {
		return nil
	}
	dst, ok1 := matrixBytes(int64(s.Rows), int64(n), s.LDD, es)
	src, ok2 := sizes.Product(int64(s.Blocks-1), s.Stride)
	src, ok3 := sizes.Sum(src, int64(s.Rows)*int64(n))
	src, ok4 := sizes.Product(src, es)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fmt.Errorf("gemm: sum: the destination or the blocks span more than 2^50 bytes: %w", device.ErrInvalidArgument)
	}
	type span struct {
		what  string
		p     device.Ptr
		bytes int64
	}
	ops := []span{{"sum destination", s.Dst, dst}, {"arrival words", s.Arrivals, 4 * int64(s.Blocks)}}
	if s.Blocks > 1 {
		ops = append(ops, span{"summed blocks", s.Src, src})
	}
	for _, op := range ops {
		if err := device.CheckRange(dev, op.p, op.bytes); err != nil {
			return fmt.Errorf("gemm: sum: %s: %w", op.what, err)
		}
	}
	return nil
}

// matrixBytes is the extent of a row-major rows × cols matrix of es-byte
// elements whose rows are ld elements apart (the last row need not be
// padded), and whether it is at most sizes.Max.
func matrixBytes(rows, cols, ld, es int64) (int64, bool) {
	body, ok := sizes.Product(rows-1, ld)
	if !ok {
		return 0, false
	}
	elems, ok := sizes.Sum(body, cols)
	if !ok {
		return 0, false
	}
	return sizes.Product(elems, es)
}

// CheckOn is Check, then CheckMemory on dev: every check a launch makes
// before anything is enqueued.
func (g Params) CheckOn(dev device.Device) error {
	if err := g.Check(); err != nil {
		return err
	}
	return g.CheckMemory(dev)
}

// Launch enqueues g on s (checked first; see Params.CheckOn).
func Launch(dev device.Device, s device.Stream, g Params) error {
	if err := g.CheckOn(dev); err != nil {
		return err
	}
	g = g.dense()
	a, b := g.maps()
	c := g.cMap()
	tma := c.Check() == nil
	if !tma {
		c = a // unused by the kernel that stores from registers
	}
	k := gemmKernels[gemmKey{g.DType, g.Out, g.layout(), tma, g.Scaling}]
	tiles := rowTilesOf(g.M) * colTilesOf(g.N)
	grid := g.Grid
	if grid == 0 {
		grid = dev.Info().SMs
	}
	grid = max(1, min(grid, tiles))
	// The last wave goes stream-K where a workspace is given, the tiles do
	// not divide among the CTAs, and each CTA's share is deep enough.
	sk, flags, partials := 0, device.Ptr(0), device.Ptr(0)
	kt := (g.K + tileKOf(g.DType) - 1) / tileKOf(g.DType)
	if g.Workspace != 0 && tiles%grid != 0 && tiles > grid && grid <= gemmMaxStreamKGrid &&
		int64(tiles%grid)*int64(kt) >= gemmStreamKMin*int64(grid) {
		// CheckMemory checked the workspace for this grid.
		sk, flags, partials = tiles%grid, g.Workspace, g.Workspace.Add(gemmFlagsBytes)
	}
	if sum := g.Sum; sum.Rows > 0 && sk > rowTilesOf(sum.Rows)*colTilesOf(g.N) {
		// A stream-K tile outside the sum could wait on a CTA held in a
		// sum's wait for arrivals that, across ranks, wait on it.
		sk, flags, partials = 0, 0, 0
	}
	d, src, sum := c, c, g.Sum // the kernels that store from registers take no sum (checkSum)
	if sum.Rows > 0 {
		d = g.dMap()
	}
	if sum.Rows > 0 && sum.Blocks > 1 {
		src = g.sMap()
	}
	return dev.Launch(s, k, grid, a, b, c, g.C, int32(g.M), int32(g.N), int32(g.K), int64(g.LDC), g.Order,
		int32(rowTilesOf(g.M)), int32(g.Group), g.Segments, int32(g.NSegs), g.Counters, g.Value, int32(sk), flags, partials,
		g.ScaleA, g.ScaleB, d, src, int32(sum.R0), int32(sum.Rows), int32(sum.Blocks), int32(sum.Self),
		int32(sum.Stride/int64(g.N)), sum.Arrivals, sum.Base, int32(sum.SegRows))
}

// Prepare loads the GEMM's kernels whose output is dt on dev (those
// of dt's inputs and of e4m3's; see Prepare).
func Prepare(dev device.Device, dt dtype.DType) error {
	n := 0
	for key, k := range gemmKernels {
		if key.out != dt {
			continue
		}
		if err := dev.Prepare(k); err != nil {
			return fmt.Errorf("gemm: preparing %s: %w", k.Name, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("gemm: no GEMM for %v: %w", dt, device.ErrNotSupported)
	}
	return nil
}

// Kernels lists the GEMM's kernels (for checks of every variant).
func Kernels() []*device.Kernel {
	var ks []*device.Kernel
	for _, k := range gemmKernels {
		ks = append(ks, k)
	}
	return ks
}
