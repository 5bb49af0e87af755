package gemm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

// gemmArgs are the GEMM kernel's arguments, in Launch's order.
type gemmArgs struct {
	a, b, cMap      device.TensorMap
	c               device.Ptr
	m, n, k         int
	ldc             int64
	order           device.Ptr
	rowTiles, group int
	segments        device.Ptr
	nsegs           int
	counters        device.Ptr
	value           uint32
	sk              int // the last wave's tiles shared out by k
	flags, partials device.Ptr
	scaleA, scaleB  device.Ptr
	dMap, sMap      device.TensorMap // the sum's destination and blocks (sum.Rows > 0)
	sum             Sum
}

func decodeGemmArgs(args []any) (gemmArgs, error) {
	var g gemmArgs
	bad := fmt.Errorf("gemm arguments %v: %w", args, device.ErrInvalidArgument)
	if len(args) != 30 {
		return g, bad
	}
	var ok [30]bool
	g.a, ok[0] = args[0].(device.TensorMap)
	g.b, ok[1] = args[1].(device.TensorMap)
	g.cMap, ok[2] = args[2].(device.TensorMap)
	g.c, ok[3] = args[3].(device.Ptr)
	var m, n, k, rowTiles, group, nsegs int32
	m, ok[4] = args[4].(int32)
	n, ok[5] = args[5].(int32)
	k, ok[6] = args[6].(int32)
	g.ldc, ok[7] = args[7].(int64)
	g.order, ok[8] = args[8].(device.Ptr)
	rowTiles, ok[9] = args[9].(int32)
	group, ok[10] = args[10].(int32)
	g.segments, ok[11] = args[11].(device.Ptr)
	nsegs, ok[12] = args[12].(int32)
	g.counters, ok[13] = args[13].(device.Ptr)
	g.value, ok[14] = args[14].(uint32)
	var sk int32
	sk, ok[15] = args[15].(int32)
	g.flags, ok[16] = args[16].(device.Ptr)
	g.partials, ok[17] = args[17].(device.Ptr)
	g.scaleA, ok[18] = args[18].(device.Ptr)
	g.scaleB, ok[19] = args[19].(device.Ptr)
	g.dMap, ok[20] = args[20].(device.TensorMap)
	g.sMap, ok[21] = args[21].(device.TensorMap)
	var r0, rows, blocks, self, blockRows, segRows int32
	r0, ok[22] = args[22].(int32)
	rows, ok[23] = args[23].(int32)
	blocks, ok[24] = args[24].(int32)
	self, ok[25] = args[25].(int32)
	blockRows, ok[26] = args[26].(int32)
	g.sum.Arrivals, ok[27] = args[27].(device.Ptr)
	g.sum.Base, ok[28] = args[28].(uint32)
	segRows, ok[29] = args[29].(int32)
	g.sum.R0, g.sum.Rows, g.sum.Blocks, g.sum.Self, g.sum.SegRows = int(r0), int(rows), int(blocks), int(self), int(segRows)
	g.sum.Dst, g.sum.Src = g.dMap.Base, g.sMap.Base
	for _, o := range ok {
		if !o {
			return g, bad
		}
	}
	g.m, g.n, g.k, g.rowTiles, g.group, g.nsegs, g.sk = int(m), int(n), int(k), int(rowTiles), int(group), int(nsegs), int(sk)
	if g.m <= 0 || g.n <= 0 || g.k <= 0 || g.group <= 0 || g.rowTiles != rowTilesOf(g.m) || g.nsegs < 0 || g.sk < 0 ||
		(g.sk > 0 && (g.flags == 0 || g.partials == 0)) {
		return g, bad
	}
	if s := &g.sum; s.Rows > 0 {
		es := int64(g.cMap.DType.Size())
		s.LDD, s.Stride = g.dMap.RowBytes/es, int64(blockRows)*int64(g.n)
		if s.R0 < 0 || s.R0%TileM != 0 || s.R0+s.Rows > g.m || s.Blocks < 1 || s.Blocks > MaxSumBlocks || s.Self < 0 ||
			s.Self >= s.Blocks || s.SegRows <= 0 || s.Stride < 0 || s.LDD < int64(g.n) || g.dMap.DType != g.cMap.DType {
			return g, bad
		}
	}
	return g, nil
}

// gemmTileHook, when set (by tests), is called before the twin computes a
// tile.
var gemmTileHook func(rt, ct int)

// gemmHost is the GEMM's Go twin: the tiles in the kernel's walk, each
// accumulated in fp32 (the last wave's in the kernel's stream-K pieces),
// scaled (e4m3 inputs, as scaling says) and rounded once, each followed by
// its segments' counting and signals, as one CTA would do them. A summed
// tile's sum is done at its turn (the kernel may queue it for later), and
// its signals follow it, as in the kernel: the reduction stream resets the
// arrival words the sum reads once the own block is signalled.
func gemmHost(in, out dtype.DType, layout BLayout, scaling Scaling) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		g, err := decodeGemmArgs(args)
		if err != nil {
			return err
		}
		scale := float32(1)
		var arrays scaleArrays
		if scaling != PerTensor {
			if arrays, err = g.scaleArrays(mem, scaling); err != nil {
				return err
			}
		} else if in == dtype.E4M3 {
			for _, p := range []device.Ptr{g.scaleA, g.scaleB} {
				if p == 0 {
					continue
				}
				b, err := mem.Bytes(p, 4)
				if err != nil {
					return fmt.Errorf("gemm scale: %w", err)
				}
				scale *= math.Float32frombits(binary.LittleEndian.Uint32(b))
			}
		}
		var order []byte
		if g.order != 0 {
			if order, err = mem.Bytes(g.order, int64(4*g.rowTiles)); err != nil {
				return fmt.Errorf("gemm row-tile order: %w", err)
			}
		}
		var segs []byte
		if g.nsegs > 0 {
			if segs, err = g.segmentTables(mem); err != nil {
				return fmt.Errorf("gemm segments: %w", err)
			}
		}
		colTiles := colTilesOf(g.n)
		tk := tileKOf(in)
		tiles, kt := g.rowTiles*colTiles, (g.k+tk-1)/tk
		if g.sk >= grid || g.sk >= tiles {
			return fmt.Errorf("gemm: %d stream-K tiles of %d over %d CTAs: %w", g.sk, tiles, grid, device.ErrInvalidArgument)
		}
		if g.sk > 0 { // the workspace the kernel would use must be there
			if _, err := mem.Bytes(g.flags, int64(4*grid)); err != nil {
				return fmt.Errorf("gemm workspace flags: %w", err)
			}
			if _, err := mem.Bytes(g.partials, int64(grid)*TileM*tileN*4); err != nil {
				return fmt.Errorf("gemm workspace partials: %w", err)
			}
		}
		for t := 0; t < tiles; t++ {
			rt, ct := gemmTile(t, order, g.rowTiles, colTiles, g.group)
			if gemmTileHook != nil {
				gemmTileHook(rt, ct)
			}
			if err := g.tile(mem, in, out, layout, scale, arrays, rt, ct, gemmStreamK(t, grid, tiles, g.sk, kt)); err != nil {
				return errors.Join(err, g.abandon(mem, segs))
			}
			if err := g.signal(mem, segs, rt); err != nil {
				return err
			}
		}
		return nil
	}
}

// gemmTile is the kernel's gm_tile: the walk's t-th tile.
func gemmTile(t int, order []byte, rowTiles, colTiles, group int) (rt, ct int) {
	perGroup := group * colTiles
	gi, in := t/perGroup, t%perGroup
	rows := min(group, rowTiles-gi*group)
	r := gi*group + in%rows
	ct = in / rows
	rt = r
	if order != nil {
		rt = int(binary.LittleEndian.Uint32(order[4*r:]))
	}
	return rt, ct
}

// scaleArrays are a row-wise or block-wise product's scales (fp32, as
// Scaling lays them out); scaling PerTensor when there are none.
type scaleArrays struct {
	scaling Scaling
	a, b    []byte
	kb      int // k tiles: block-wise scales per row of A and per block row of B
}

func (s scaleArrays) at(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// scaleArrays reads the scale arrays of a row-wise or block-wise product.
func (g gemmArgs) scaleArrays(mem device.HostMemory, scaling Scaling) (scaleArrays, error) {
	s := scaleArrays{scaling: scaling, kb: (g.k + ScaleBlock - 1) / ScaleBlock}
	na, nb := ScaleCounts(scaling, g.m, g.n, g.k)
	var err error
	if s.a, err = mem.Bytes(g.scaleA, 4*int64(na)); err != nil {
		return s, fmt.Errorf("gemm %v scales of A: %w", scaling, err)
	}
	if s.b, err = mem.Bytes(g.scaleB, 4*int64(nb)); err != nil {
		return s, fmt.Errorf("gemm %v scales of B: %w", scaling, err)
	}
	return s, nil
}

// tile computes output tile (rt, ct), summing its k tiles in pieces: the
// first piece's sum, then each other piece's sum added to it; the sum
// times scale (per tensor), or times the row's and column's scales (row-
// wise), is rounded to out. Block-wise, each piece's sum is built as the
// kernel's gm_mainloop_block does: per 128-deep k tile, the tile's fp32
// sum times its scales (sa·sb, then times the sum, added in one fused
// multiply-add; through float64, which rounds once more only in rare
// ties) into the piece's accumulator.
func (g gemmArgs) tile(mem device.HostMemory, dt, out dtype.DType, layout BLayout, scale float32, sc scaleArrays, rt, ct int, pieces [][2]int) error {
	es, tk, os := int64(dt.Size()), tileKOf(dt), int64(out.Size())
	r0, r1 := rt*TileM, min((rt+1)*TileM, g.m)
	c0, c1 := ct*tileN, min((ct+1)*tileN, g.n)
	if r0 >= r1 || c0 >= c1 {
		return nil
	}
	a, err := mem.Bytes(g.a.Base.Add(int64(r0)*g.a.RowBytes), int64(r1-r0-1)*g.a.RowBytes+int64(g.k)*es)
	if err != nil {
		return fmt.Errorf("gemm A: %w", err)
	}
	b, err := mem.Bytes(g.b.Base, (g.b.Rows-1)*g.b.RowBytes+g.b.Cols*es)
	if err != nil {
		return fmt.Errorf("gemm B: %w", err)
	}
	var c []byte
	summed := g.sum.covers(rt)
	if summed { // the tile goes to Dst, summed (sumTile): computed aside
		c = make([]byte, (int64(r1-r0-1)*g.ldc+int64(c1))*os)
	} else if c, err = mem.Bytes(g.c.Add(int64(r0)*g.ldc*os), (int64(r1-r0-1)*g.ldc+int64(c1))*os); err != nil {
		return fmt.Errorf("gemm C: %w", err)
	}
	aStride, bStride := int(g.a.RowBytes/es), int(g.b.RowBytes/es)
	bAt := func(kk, j int) float32 { return float32(dt.Get(b, kk*bStride+j)) }
	if layout == BNK {
		bAt = func(kk, j int) float32 { return float32(dt.Get(b, j*bStride+kk)) }
	}
	for i := 0; i < r1-r0; i++ {
		for j := c0; j < c1; j++ {
			var acc float32
			for p, piece := range pieces {
				var sum float32
				if sc.scaling == BlockWise {
					sum = g.blockSum(dt, a, i*aStride, r0+i, j, bAt, sc, piece)
				} else {
					for kk := piece[0] * tk; kk < min(piece[1]*tk, g.k); kk++ {
						sum += float32(dt.Get(a, i*aStride+kk)) * bAt(kk, j)
					}
				}
				if p == 0 {
					acc = sum
				} else {
					acc += sum
				}
			}
			switch sc.scaling {
			case RowWise:
				acc *= sc.at(sc.a, r0+i) * sc.at(sc.b, j)
			case PerTensor:
				acc *= scale
			}
			out.Put(c, i*int(g.ldc)+j, float64(acc))
		}
	}
	if summed {
		return g.sumTile(mem, out, c, r0, r1, c0, c1)
	}
	return nil
}

// covers reports whether row tile rt's rows are summed.
func (s Sum) covers(rt int) bool { return s.Rows > 0 && rt*TileM >= s.R0 && rt*TileM < s.R0+s.Rows }

// sumTile is the kernel's sums (gm_sums_queued) for the tile of rows [r0, r1) and
// columns [c0, c1) computed into c (rows ldc apart, from column 0): once
// the other blocks' rows have landed, each row of the tile summed with
// theirs (SumInTurn) goes to Dst.
func (g gemmArgs) sumTile(mem device.HostMemory, dt dtype.DType, c []byte, r0, r1, c0, c1 int) error {
	s, es := g.sum, int64(dt.Size())
	last := min(r1, s.R0+s.Rows) - 1 - s.R0
	want := s.Base + uint32(last/s.SegRows) + 1
	for k := 0; k < s.Blocks; k++ {
		if k == s.Self {
			continue
		}
		w := device.Word{Addr: s.Arrivals.Add(4 * int64(k)), Label: fmt.Sprintf("arrival of block %d for the GEMM's sum", k)}
		if err := mem.Wait32(w, device.GEQ, want); err != nil {
			return err
		}
	}
	views := make([][]byte, s.Blocks)
	for r := r0; r <= last+s.R0; r++ {
		br := int64(r - s.R0) // the row in every block
		for k := range views {
			if k == s.Self {
				off := int64(r-r0) * g.ldc
				views[k] = c[(off+int64(c0))*es : (off+int64(c1))*es]
				continue
			}
			var err error
			if views[k], err = mem.Bytes(s.Src.Add((int64(k)*s.Stride+br*int64(g.n)+int64(c0))*es), int64(c1-c0)*es); err != nil {
				return fmt.Errorf("gemm sum: block %d: %w", k, err)
			}
		}
		dst, err := mem.Bytes(s.Dst.Add((br*s.LDD+int64(c0))*es), int64(c1-c0)*es)
		if err != nil {
			return fmt.Errorf("gemm sum: destination: %w", err)
		}
		SumInTurn(dt, dst, views, s.Self, int64(c1-c0))
	}
	return nil
}

// SumInTurn is the GEMM's sum of a Sum's blocks, count elements of each
// view into dst: block self (C's own rows, already rounded), then each
// other block added to it and rounded (TMA's reduce adds one block at a
// time), in the order the peers' GEMMs compute them: block self-1 first,
// then self-2, and so on around (intranode.RankSwizzle), so that a block
// that lands early can be added early without changing the bits. With two
// blocks that is kernels.ReduceRange's one rounding of their fp32 sum.
func SumInTurn(dt dtype.DType, dst []byte, views [][]byte, self int, count int64) {
	copy(dst[:count*int64(dt.Size())], views[self])
	for i := 1; i < len(views); i++ {
		v := views[(self-i+len(views))%len(views)]
		kernels.ReduceRange(dt, dst, [][]byte{dst, v}, 0, count)
	}
}

// blockSum is element (row, j)'s block-wise sum over the k tiles of piece,
// each tile's sum promoted with its scales (A's row starting at aRow in a).
func (g gemmArgs) blockSum(dt dtype.DType, a []byte, aRow, row, j int, bAt func(kk, j int) float32, sc scaleArrays, piece [2]int) float32 {
	var acc float32
	for kt := piece[0]; kt < piece[1]; kt++ {
		var sum float32
		for kk := kt * ScaleBlock; kk < min((kt+1)*ScaleBlock, g.k); kk++ {
			sum += float32(dt.Get(a, aRow+kk)) * bAt(kk, j)
		}
		s := sc.at(sc.a, kt*g.m+row) * sc.at(sc.b, j/ScaleBlock*sc.kb+kt)
		acc = float32(math.FMA(float64(sum), float64(s), float64(acc)))
	}
	return acc
}

// segmentTables reads the segment records and, after them, the segments
// of each row tile (Tables), checking the indices.
func (g gemmArgs) segmentTables(mem device.HostMemory) ([]byte, error) {
	head := int64(gemmSegmentRecord*g.nsegs + 4*(g.rowTiles+1))
	b, err := mem.Bytes(g.segments, head)
	if err != nil {
		return nil, err
	}
	total := int64(binary.LittleEndian.Uint32(b[head-4:]))
	if b, err = mem.Bytes(g.segments, head+4*total); err != nil {
		return nil, err
	}
	prev := uint32(0)
	for rt := 0; rt <= g.rowTiles; rt++ {
		o := binary.LittleEndian.Uint32(b[gemmSegmentRecord*g.nsegs+4*rt:])
		if o < prev || (rt == 0 && o != 0) {
			return nil, fmt.Errorf("row tile %d's segments start at %d: %w", rt, o, device.ErrInvalidArgument)
		}
		prev = o
	}
	for i := int64(0); i < total; i++ {
		if s := binary.LittleEndian.Uint32(b[head+4*i:]); s >= uint32(g.nsegs) {
			return nil, fmt.Errorf("row tiles' segment %d of %d: %w", s, g.nsegs, device.ErrInvalidArgument)
		}
	}
	return b, nil
}

// signal counts row tile rt in every segment it meets (the tables' list for
// rt) and raises the segments it completes, resetting their counters.
// abandon ends a launch that failed part-way: every segment's counter is
// zeroed, as a complete launch leaves it, and every segment's signal
// raised, so that no consumer waits out its timeout for tiles that will
// not come; the launch's error then reaches it through the stream's events.
// (A kernel that faults on a GPU ends its whole context instead.)
func (g gemmArgs) abandon(mem device.HostMemory, segs []byte) error {
	var errs []error
	for s := 0; s < g.nsegs; s++ {
		errs = append(errs, mem.Store32(g.counters.Add(int64(4*s)), 0))
		rec := segs[gemmSegmentRecord*s:]
		errs = append(errs, mem.Store32(device.Ptr(binary.LittleEndian.Uint64(rec[16:])), g.value))
	}
	return errors.Join(errs...)
}

func (g gemmArgs) signal(mem device.HostMemory, segs []byte, rt int) error {
	if g.nsegs == 0 {
		return nil
	}
	offsets := segs[gemmSegmentRecord*g.nsegs:]
	index := offsets[4*(g.rowTiles+1):]
	b, e := binary.LittleEndian.Uint32(offsets[4*rt:]), binary.LittleEndian.Uint32(offsets[4*rt+4:])
	for i := b; i < e; i++ {
		s := int(binary.LittleEndian.Uint32(index[4*i:]))
		rec := segs[gemmSegmentRecord*s:]
		need := binary.LittleEndian.Uint32(rec[8:])
		counter := g.counters.Add(int64(4 * s))
		word, err := mem.Bytes(counter, 4)
		if err != nil {
			return fmt.Errorf("gemm counter %d: %w", s, err)
		}
		n := binary.LittleEndian.Uint32(word) + 1
		if n == need {
			n = 0
		}
		if err := mem.Store32(counter, n); err != nil {
			return err
		}
		if n == 0 {
			if err := mem.Store32(device.Ptr(binary.LittleEndian.Uint64(rec[16:])), g.value); err != nil {
				return fmt.Errorf("gemm signal of segment %d: %w", s, err)
			}
		}
	}
	return nil
}
