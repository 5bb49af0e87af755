package benchmarks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// Inputs are the inputs of one call, generated block by block from a seed so
// that any rank can regenerate the blocks it needs for its reference: block b
// of rank q's input (the rows destined to rank b) depends only on (seed, q, b).
type Inputs struct {
	Seed    uint64
	DType   dtype.DType
	World   int
	RowsPer int
	Cols    int
}

// Block returns block b of rank q's input.
func (in Inputs) Block(q, b int) []byte {
	rng := rand.New(rand.NewPCG(in.Seed, uint64(q)<<32|uint64(b)))
	return check.Random(rng, in.DType, in.RowsPer*in.Cols)
}

// Rank returns rank q's whole [M, N] input.
func (in Inputs) Rank(q int) []byte {
	var out []byte
	for b := 0; b < in.World; b++ {
		out = append(out, in.Block(q, b)...)
	}
	return out
}

// Expected is the fp64 reference of rank r's output.
func (in Inputs) Expected(r int) check.Expected {
	blocks := make([][]byte, in.World)
	for q := range blocks {
		blocks[q] = in.Block(q, r)
	}
	// Each "input" here is just the one block, so the reference's rank 0
	// rows are rank r's rows.
	return check.ReduceScatter(in.DType, blocks, 0, in.RowsPer, in.Cols)
}

// agreeSeed returns a fresh random seed, the same on every rank (rank 0's).
func agreeSeed(ctx context.Context, r world.Rank) (uint64, error) {
	all, err := r.Comm.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, rand.Uint64()))
	if err != nil {
		return 0, err
	}
	if len(all[0]) != 8 {
		return 0, fmt.Errorf("benchmarks: rank 0 sent a %d-byte seed", len(all[0]))
	}
	return binary.LittleEndian.Uint64(all[0]), nil
}

// buffers are one rank's device buffers for a shape.
type buffers struct {
	dev      device.Device
	in, out  device.Ptr
	inBase   device.Ptr // in's allocation: in is inBase, or up to 15 bytes past it (bench --input-offset)
	ref      device.Ptr // NCCL's output, when comparing
	m, n     int
	dt       dtype.DType
	rowsPer  int
	released bool
}

// inputRound is the granule the input's allocation is rounded up to.
const inputRound = 2 << 20

func allocBuffers(dev device.Device, m, n, world int, dt dtype.DType, withRef bool) (*buffers, error) {
	b := &buffers{dev: dev, m: m, n: n, dt: dt, rowsPer: m / world}
	var err error
	alloc := func(p *device.Ptr, bytes int64) {
		if err == nil {
			*p, err = dev.Alloc(max(bytes, 256))
		}
	}
	es := int64(dt.Size())
	// The input with room for --input-offset, rounded up to whole 2 MiB
	// pages as PyTorch's caching allocator rounds its large blocks: on 2
	// H200s the copy engine read a registered allocation 16 bytes past
	// them 25-35% slower (benchmarks/RESULTS.md).
	alloc(&b.inBase, (int64(m)*int64(n)*es+16+inputRound-1)/inputRound*inputRound)
	b.in = b.inBase
	alloc(&b.out, int64(b.rowsPer)*int64(n)*es)
	if withRef {
		alloc(&b.ref, int64(b.rowsPer)*int64(n)*es)
	}
	if err != nil {
		return nil, errors.Join(err, b.free())
	}
	return b, nil
}

func (b *buffers) inTensor() rs2d.Tensor {
	return rs2d.Tensor{Ptr: b.in, Rows: b.m, Cols: b.n, DType: b.dt}
}

func (b *buffers) outTensor() rs2d.Tensor {
	return rs2d.Tensor{Ptr: b.out, Rows: b.rowsPer, Cols: b.n, DType: b.dt}
}

func (b *buffers) outBytes() int { return b.rowsPer * b.n * b.dt.Size() }

func (b *buffers) free() error {
	if b.released {
		return nil
	}
	b.released = true
	var errs []error
	for _, p := range []device.Ptr{b.inBase, b.out, b.ref} {
		if p != 0 {
			errs = append(errs, b.dev.Free(p))
		}
	}
	return errors.Join(errs...)
}

// rig is the stream a timed job enqueues on and the two events that time it.
type rig struct {
	s      device.Stream
	t0, t1 device.Event
}

func newRig(dev device.Device) (*rig, error) {
	g := &rig{}
	var err error
	if g.s, err = dev.NewStream(device.Normal); err != nil {
		return nil, err
	}
	if g.t0, err = dev.NewTimedEvent(); err == nil {
		g.t1, err = dev.NewTimedEvent()
	}
	if err != nil {
		return nil, errors.Join(err, g.close())
	}
	return g, nil
}

func (g *rig) close() error {
	var errs []error
	for _, e := range []device.Event{g.t0, g.t1} {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(append(errs, g.s.Close())...)
}

// Printer writes only on rank 0.
type Printer struct {
	W    io.Writer
	Rank int
}

// Count is n and the noun, plural unless n is 1: "1 call", "5 calls".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Printf prints on rank 0.
func (p Printer) Printf(format string, args ...any) {
	if p.Rank == 0 && p.W != nil {
		fmt.Fprintf(p.W, format, args...)
	}
}

// Job is the per-rank function the command line runs over a world.
type Job func(ctx context.Context, r world.Rank) error
