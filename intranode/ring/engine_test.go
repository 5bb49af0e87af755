package ring_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// ringRank is one rank's ring on a fresh heap.
type ringRank struct {
	st   *ring.Engine
	heap *symm.Heap
}

func newRingRank(ctx context.Context, r world.Rank, shape ring.Shape, dt dtype.DType, cols int) (*ringRank, error) {
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return nil, err
	}
	spec := intranode.Spec{Place: place, DType: dt, Cols: cols, Proto: symm.Growing}
	m := ring.NewMaker(spec, shape)
	var l symm.Layout
	m.AddTo(&l)
	heap, err := symm.New(ctx, r.Comm, r.Dev, &l)
	if err != nil {
		return nil, err
	}
	e, err := m.Make(ctx, intranode.Env{Spec: spec, Dev: r.Dev, Comm: r.Comm, Heap: heap})
	if err != nil {
		return nil, errors.Join(err, heap.Close())
	}
	return &ringRank{st: e.(*ring.Engine), heap: heap}, nil
}

func (rr *ringRank) close(ctx context.Context, comm bootstrap.Comm) error {
	// No peer may still write into this heap: every rank synchronized its
	// stream before the barrier.
	return errors.Join(comm.Barrier(ctx), rr.st.Close(), rr.heap.Close())
}

// ringReference is the ring's contract, element by element: the chain of
// destination d starts with the rows of local rank d+1 and adds those of
// d+2, ..., d in turn, each sum taken in fp32 (int32: wrapping) and
// rounded to dt at every hop.
func ringReference(dt dtype.DType, inputs [][]byte, d int, off, n int64) []byte {
	lws := len(inputs)
	es := int64(dt.Size())
	out := make([]byte, n*es)
	le := binary.LittleEndian
	for i := int64(0); i < n; i++ {
		j := off + i
		switch dt {
		case dtype.I32:
			var acc uint32
			for h := 1; h <= lws; h++ {
				acc += le.Uint32(inputs[(d+h)%lws][4*j:])
			}
			le.PutUint32(out[4*i:], acc)
		case dtype.F32:
			var acc float32
			for h := 1; h <= lws; h++ {
				acc += math.Float32frombits(le.Uint32(inputs[(d+h)%lws][4*j:]))
			}
			le.PutUint32(out[4*i:], math.Float32bits(acc))
		default:
			widen, narrow := dtype.BF16ToF32, dtype.F32ToBF16
			if dt == dtype.F16 {
				widen, narrow = dtype.F16ToF32, dtype.F32ToF16
			}
			v := le.Uint16(inputs[(d+1)%lws][2*j:])
			for h := 2; h <= lws; h++ {
				v = narrow(widen(v) + widen(le.Uint16(inputs[(d+h)%lws][2*j:])))
			}
			le.PutUint16(out[2*i:], v)
		}
	}
	return out
}

// The ring's node steps, bit for bit against the reference, on every local
// world size and dtype, with one and two slots, chunks that divide neither
// the rows nor the channels' shares, and several launches in a row (the
// credits and the slots are reused across launches and row ranges).
func TestRingStepsMatchTheReference(t *testing.T) {
	type tc struct {
		lws   int
		shape ring.Shape
	}
	var cases []tc
	for _, lws := range []int{1, 2, 3, 4} {
		for _, slots := range []int{1, 2} {
			cases = append(cases,
				tc{lws, ring.Shape{Channels: 1, Slots: slots, ChunkBytes: 12}},
				tc{lws, ring.Shape{Channels: 3, Slots: slots, ChunkBytes: 40}},
			)
		}
	}
	for _, c := range cases {
		for _, dt := range dtype.All {
			name := fmt.Sprintf("lws%d/ch%d/slots%d/chunk%d/%v", c.lws, c.shape.Channels, c.shape.Slots, c.shape.ChunkBytes, dt)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if c.shape.ChunkBytes%int64(dt.Size()) != 0 {
					t.Skip("the chunk is not whole elements of", dt)
				}
				runRingSteps(t, c.lws, c.shape, dt)
			})
		}
	}
}

func runRingSteps(t *testing.T, lws int, shape ring.Shape, dt dtype.DType) {
	shapeW := bootstrap.Shape{Nodes: 1, LocalSize: lws}
	w, err := world.Sim(shapeW, world.SimOptions{Device: sim.Options{WaitTimeout: time.Minute}})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	const rowsPer, cols = 7, 5 // 35 elements per block: no chunk above divides it
	es := dt.Size()
	// Launches: whole blocks, then row ranges as rail rounds cut them.
	parts := [][2]int{{0, rowsPer}, {0, 3}, {3, 3}, {6, 1}, {0, rowsPer}}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 7))
	inputs := make([][][]byte, len(parts)) // [launch][rank]
	for i := range inputs {
		inputs[i] = make([][]byte, lws)
		for r := range inputs[i] {
			inputs[i][r] = check.Random(rng, dt, rowsPer*lws*cols)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) (err error) {
		me := r.Comm.Rank()
		rr, err := newRingRank(ctx, r, shape, dt, cols)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rr.close(ctx, r.Comm)) }()
		in, err := r.Dev.Alloc(int64(rowsPer * lws * cols * es))
		if err != nil {
			return err
		}
		defer r.Dev.Free(in)
		out, err := r.Dev.Alloc(int64(rowsPer * cols * es))
		if err != nil {
			return err
		}
		defer r.Dev.Free(out)
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		epoch := symm.Epoch(0)
		for i, part := range parts {
			epoch = epoch.Next()
			row0, rows := part[0], part[1]
			if err := r.Dev.CopyToDevice(in, inputs[i][me]); err != nil {
				return err
			}
			if err := r.Dev.CopyToDevice(out, check.Poison(dt, rowsPer*cols)); err != nil {
				return err
			}
			call := intranode.Call{Input: in, RowsPer: rowsPer, Epoch: epoch}
			step := intranode.Step{Call: call, Node: 0, Row0: row0, Rows: rows, ReduceTo: out}
			if _, err := rr.st.Step(s, step); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			got := make([]byte, rowsPer*cols*es)
			if err := r.Dev.CopyToHost(got, out); err != nil {
				return err
			}
			n := int64(rows * cols)
			want := ringReference(dt, inputs[i], me, int64(me*rowsPer*cols+row0*cols), n)
			if !bytes.Equal(got[:n*int64(es)], want) {
				return fmt.Errorf("launch %d (rows %d+%d): result differs from the ring's reference", i, row0, rows)
			}
			if !bytes.Equal(got[n*int64(es):], check.Poison(dt, rowsPer*cols)[n*int64(es):]) {
				return fmt.Errorf("launch %d: wrote past its %d rows", i, rows)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// The ring's reference is itself a sum: against fp64, within the bound of
// lws-1 roundings (and no fewer: this is what the rs2d tolerance counts).
func TestRingReferenceIsTheSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 8))
	for _, dt := range dtype.All {
		for _, lws := range []int{1, 2, 4, 8} {
			const n = 4096
			inputs := make([][]byte, lws)
			for r := range inputs {
				inputs[r] = check.Random(rng, dt, n*lws)
			}
			for d := 0; d < lws; d++ {
				got := ringReference(dt, inputs, d, int64(d*n), n)
				rep := check.ReduceScatter(dt, inputs, d, n, 1).Compare(got, max(1, lws-1))
				require.True(t, rep.OK(), "%v lws %d dest %d: %v", dt, lws, d, rep)
			}
		}
	}
}

// A ring shape that cannot carry the dtype is refused before anything is
// laid out.
func TestRingShapeCheck(t *testing.T) {
	for _, s := range []ring.Shape{
		{Channels: 0, Slots: 1, ChunkBytes: 16},
		{Channels: 1, Slots: 0, ChunkBytes: 16},
		{Channels: 1, Slots: 1, ChunkBytes: 2},
		{Channels: 1, Slots: 1, ChunkBytes: 6},
	} {
		require.ErrorIs(t, s.Check(4), device.ErrInvalidArgument, "%+v", s)
	}
	require.NoError(t, ring.Shape{Channels: 2, Slots: 1, ChunkBytes: 12}.Check(4))
	shape := ring.Shape{Channels: 3, Slots: 2, ChunkBytes: 40}
	require.Equal(t, int64(48), shape.SlotBytes())
	require.Equal(t, int64(3*3*2*48), shape.FifoBytes(4))
	require.Zero(t, shape.FifoBytes(1))
}
