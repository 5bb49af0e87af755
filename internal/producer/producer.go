package producer

import (
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/intranode/ce"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// segmentRows is about how many rows a signal segment covers: the rows the
// GEMM's walk finishes together (gemm.DefaultGroup row tiles).
const segmentRows = gemm.DefaultGroup * gemm.TileM

// maxAutoSegments bounds the segments Auto gives a destination's rows.
const maxAutoSegments = 8

// SumMinKLocal and SumMinRows bound where, by default, the own GEMM sums
// the own block on one node of three or more ranks (on two it always
// does): its storer adds each peer's block as it lands, beside later
// tiles. That pays where the GEMM outlasts the copies (KLocal at least
// SumMinKLocal) and each rank's own block spans enough row tiles
// (SumMinRows rows) for the adds of earlier tiles to run beside later
// ones; elsewhere the adds slow the last copy beside them or come after
// the GEMM, and the reduce pass is faster (benchmarks/RESULTS.md).
const (
	SumMinKLocal = 3072
	SumMinRows   = 1024
)

// SumsMany is that default for a product of kLocal per rank and
// rowsPerRank rows per rank's block.
func SumsMany(kLocal, rowsPerRank int) bool {
	return kLocal >= SumMinKLocal && rowsPerRank >= SumMinRows
}

// SegmentsFor is how many signal segments each destination's rows come in,
// by default, for an own GEMM with rowsPerRank rows per destination: about
// one per segmentRows rows, at most maxAutoSegments. Where the GEMM may sum
// the own block (on nodes nodes of lws ranks: ce.SumsOwnBlock; on more than
// two ranks by default only from SumMinRows rows, see Overlapped.Enqueue)
// at least two where the rows allow: its storer waits for the peers' rows
// of each segment, and with one segment the first own tile would wait for
// the copy of a peer's whole block. Elsewhere the second segment only adds
// a signal and splits the copies.
func SegmentsFor(rowsPerRank, nodes, lws int) int {
	n := max(1, min(maxAutoSegments, rowsPerRank/segmentRows))
	if ce.SumsOwnBlock(nodes, lws) && (lws == 2 || rowsPerRank >= SumMinRows) && rowsPerRank >= 2*gemm.TileM {
		n = max(n, 2)
	}
	return n
}

// Producer is the own GEMM as the producer of an rs2d context's overlapped
// calls (GemmRS's, or a caller's through the C ABI): it keeps the segment
// counters the GEMM counts tiles in (zero between launches), the workspace
// of its stream-K last wave and, by M, the tables that order C's row
// tiles and name each segment's signal word. Its launches run one at a
// time (on one stream, or ordered).
type Producer struct {
	dev       device.Device
	counters  device.Ptr
	workspace device.Ptr
	tables    map[int]ownTables
}

// NewProducer makes a producer for a world of world ranks on dev.
func NewProducer(dev device.Device, world int) (*Producer, error) {
	zero := make([]byte, 4*world*rs2d.MaxSegments)
	p, err := dev.Alloc(int64(len(zero)))
	if err != nil {
		return nil, fmt.Errorf("gemmrs: segment counters: %w", err)
	}
	if err := dev.CopyToDevice(p, zero); err != nil {
		return nil, errors.Join(fmt.Errorf("gemmrs: segment counters: %w", err), dev.Free(p))
	}
	ws, err := gemm.NewWorkspace(dev)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("gemmrs: GEMM workspace: %w", err), dev.Free(p))
	}
	return &Producer{dev: dev, counters: p, workspace: ws, tables: map[int]ownTables{}}, nil
}

// Enqueue enqueues on s the own GEMM spec (spec.C the call's [M, N] input,
// spec.M its rows) in one launch that computes C's row tiles in order (the
// context's consumption order), in groups that keep the segments apart
// (gemm.GroupFor), and raises each segment of sig as its tiles are stored.
// It refuses a product the GEMM cannot compute and a context that splits
// its first block (a producer of two block GEMMs), wrapping
// ErrNotSupported, before enqueuing anything.
func (p *Producer) Enqueue(s device.Stream, spec gemm.Params, order []int, sig rs2d.Signals) error {
	if err := spec.Check(); err != nil {
		return err
	}
	if sig.EarlyRows(spec.M) > 0 {
		return fmt.Errorf("gemmrs: the context splits its first block, which the own GEMM does not: %w", device.ErrNotSupported)
	}
	t, err := p.tablesFor(spec.M, spec.N, order, sig)
	if err != nil {
		return err
	}
	spec.Order, spec.Segments, spec.NSegs, spec.Counters, spec.Value = t.order, t.segs, t.n, p.counters, sig.Value
	r0, r1 := sig.SegmentRows(spec.M, 0)
	spec.Group = gemm.GroupFor(r1 - r0)
	spec.Workspace = p.workspace
	return gemm.Launch(p.dev, s, spec)
}

// Workspace is the producer's stream-K workspace (gemm.Params.Workspace),
// for a launch of the own GEMM ordered with the producer's.
func (p *Producer) Workspace() device.Ptr { return p.workspace }

// Close frees the producer's counters, workspace and tables; its launches
// must be done.
func (p *Producer) Close() error {
	errs := []error{p.dev.Free(p.counters), p.dev.Free(p.workspace)}
	for m, t := range p.tables {
		errs = append(errs, t.free(p.dev))
		delete(p.tables, m)
	}
	return errors.Join(errs...)
}

// ownTables are the own GEMM's device tables for calls of one M: the
// row-tile order and the segment records (gemm.Tables).
type ownTables struct {
	order, segs device.Ptr
	n           int
}

// tablesFor returns the tables for calls of m rows, uploading them at the
// first call of that M (the signal words they name do not move).
func (p *Producer) tablesFor(m, n int, order []int, sig rs2d.Signals) (ownTables, error) {
	if t, ok := p.tables[m]; ok {
		return t, nil
	}
	var segs []gemm.Segment
	rowsPer := m / len(order)
	for _, d := range order {
		for j := 0; j < sig.Segments(); j++ {
			r0, r1 := sig.SegmentRows(m, j)
			if r1 <= r0 {
				continue // nothing waits for an empty segment
			}
			addr, err := sig.SegmentAddr(d, j)
			if err != nil {
				return ownTables{}, err
			}
			segs = append(segs, gemm.Segment{R0: d*rowsPer + r0, R1: d*rowsPer + r1, Signal: addr})
		}
	}
	tileOrder, records := gemm.Tables(m, n, segs)
	t := ownTables{n: len(segs)}
	var err error
	for _, x := range []struct {
		p    *device.Ptr
		data []byte
	}{{&t.order, tileOrder}, {&t.segs, records}} {
		if *x.p, err = p.dev.Alloc(int64(len(x.data))); err != nil {
			return ownTables{}, errors.Join(err, t.free(p.dev))
		}
		if err = p.dev.CopyToDevice(*x.p, x.data); err != nil {
			return ownTables{}, errors.Join(err, t.free(p.dev))
		}
	}
	p.tables[m] = t
	return t, nil
}

func (t ownTables) free(dev device.Device) error {
	var errs []error
	for _, p := range []device.Ptr{t.order, t.segs} {
		if p != 0 {
			errs = append(errs, dev.Free(p))
		}
	}
	return errors.Join(errs...)
}
