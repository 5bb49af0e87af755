package pull_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/pull"
	"github.com/seed12530e24/hiercoll/intranode/ring"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// late holds back one kind of work on a rank's streams, as a slow GPU
// would be late: its input copy into the symmetric input (copies: the
// device's copies and the SM copies) or its pull or one-shot kernels
// (reads).
type late struct {
	device.Device
	delay         time.Duration
	copies, reads bool
	launches      *atomic.Int64 // where not nil: counts the pull kernels launched
	kernels       *sync.Map     // where not nil: the names of the kernels launched
	copied        *atomic.Int64 // where not nil: counts the device copies
	copiedBytes   *atomic.Int64 // where not nil: sums the bytes of both kinds of copies
	smCopies      *atomic.Int64 // where not nil: counts the SM copies
	pageBytes     int64         // where not 0: the large page its Info reports
}

func (l *late) Info() device.Info {
	info := l.Device.Info()
	if l.pageBytes != 0 {
		info.PageBytes = l.pageBytes
	}
	return info
}

// smCopyBytes is the bytes that a launch of k with args moves if it is an
// SM copy (kernels.LaunchCopy: the int32 reduce over one block), else 0.
func smCopyBytes(k *device.Kernel, args []any) int64 {
	if r, err := kernels.Reduce(dtype.I32); err != nil || k != r || args[3].(int32) != 1 {
		return 0
	}
	return args[4].(int64) * 4
}

func (l *late) sleep(s device.Stream) error {
	k := &device.Kernel{Name: "sleep", Host: func(device.HostMemory, int, []any) error { time.Sleep(l.delay); return nil }}
	return l.Device.Launch(s, k, 1)
}

// copying counts a copy of n bytes on s (in count, where not nil, and in
// copiedBytes) and holds it back where copies are late.
func (l *late) copying(s device.Stream, n int64, count *atomic.Int64) error {
	if count != nil {
		count.Add(1)
	}
	if l.copiedBytes != nil {
		l.copiedBytes.Add(n)
	}
	if l.copies {
		return l.sleep(s)
	}
	return nil
}

func (l *late) Copy(s device.Stream, dst, src device.Ptr, n int64) error {
	if err := l.copying(s, n, l.copied); err != nil {
		return err
	}
	return l.Device.Copy(s, dst, src, n)
}

func (l *late) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	if n := smCopyBytes(k, args); n > 0 {
		if err := l.copying(s, n, l.smCopies); err != nil {
			return err
		}
	}
	if l.launches != nil && strings.HasPrefix(k.Name, "hc_pull_") {
		l.launches.Add(1)
	}
	if l.kernels != nil {
		l.kernels.Store(k.Name, true)
	}
	if l.reads && (strings.HasPrefix(k.Name, "hc_pull_") || strings.HasPrefix(k.Name, "hc_oneshot_") || strings.HasPrefix(k.Name, "hc_ring_")) {
		if err := l.sleep(s); err != nil {
			return err
		}
	}
	return l.Device.Launch(s, k, grid, args...)
}

type spec struct {
	shape    bootstrap.Shape
	dt       dtype.DType
	rowsPer  int
	n        int
	calls    int
	zeroCopy bool // write each call's rows into Context.Input (else a buffer of the caller's)
	register bool // register the caller's buffer (Context.Register): the peers read it in place
	// ceMin and ceChunk are Tuning.CopyEnginePullBytes and
	// CopyEnginePullChunk (0: the defaults).
	ceMin, ceChunk int64
	// ringMin and ring are Tuning.RingFromBytes and the ring's shape
	// (RingChannels, RingSlots, RingChunkBytes; zero: the defaults).
	ringMin int64
	ring    [3]int
	graphs  bool
	late    *late // rank 1's device wrapper (nil: none)
	bound   int64 // MaxSymmetricBytes (0: none); the call then goes in rounds
	// oneShot is Tuning.OneShotBytes (0: the default, which takes these
	// tests' small blocks in one shot; -1: every call pulled).
	oneShot int64
	// rowsPerCall, where given, are the rows per rank of each call in
	// turn (rowsPer is then their largest).
	rowsPerCall []int
	// inOffset, where given, is each rank's offset in bytes of its input
	// (a buffer of its own) from a 16-byte aligned base.
	inOffset []int64
	// zeroCopyRanks, where given, are the ranks that write their rows
	// into Context.Input (the others: zeroCopy).
	zeroCopyRanks []int
	// wantErr, where given, is the error the ranks return, else none.
	wantErr error
	// waitTimeout bounds the simulated device's waits (0: a minute).
	waitTimeout time.Duration
	// pageBytes is the simulated devices' large page (0: none).
	pageBytes int64
}

// rowsOf is the rows per rank of call c.
func (sp spec) rowsOf(c int) int {
	if len(sp.rowsPerCall) == 0 {
		return sp.rowsPer
	}
	return sp.rowsPerCall[c%len(sp.rowsPerCall)]
}

// run makes calls on a fresh simulated world with the pull engine, each on
// fresh random data and a poisoned output, every rank waiting only for its
// own calls before writing the next input (only the kernel's handshakes
// keep the ranks in step), and checks every output against fp64.
func run(t *testing.T, sp spec) {
	t.Helper()
	ws := sp.shape.World()
	m := sp.rowsPer * ws
	wait := sp.waitTimeout
	if wait == 0 {
		wait = time.Minute
	}
	w, err := world.Sim(sp.shape, world.SimOptions{Device: sim.Options{WaitTimeout: wait, PageBytes: sp.pageBytes}})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	inputs := make([][][]byte, sp.calls)
	for c := range inputs {
		inputs[c] = make([][]byte, ws)
		for r := range inputs[c] {
			inputs[c][r] = check.Random(rng, sp.dt, sp.rowsOf(c)*ws*sp.n)
		}
	}
	err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) error {
		dev := r.Dev
		if sp.late != nil && r.Comm.Rank() == 1 {
			l := *sp.late
			l.Device = r.Dev
			dev = &l
		}
		rs, err := rs2d.New(ctx, r.Comm, dev, rs2d.Config{MaxM: m, N: sp.n, DType: sp.dt, Engine: rs2d.EnginePull, Graphs: sp.graphs,
			Timeout: time.Minute, MaxSymmetricBytes: sp.bound, Tuning: rs2d.Tuning{OneShotBytes: sp.oneShot, CopyEnginePullBytes: sp.ceMin, CopyEnginePullChunk: sp.ceChunk,
				RingFromBytes: sp.ringMin, RingChannels: sp.ring[0], RingSlots: sp.ring[1], RingChunkBytes: int64(sp.ring[2])}})
		if err != nil {
			return err
		}
		defer rs.Close()
		if mem := rs.Memory(); sp.bound > 0 && (mem.PullRows < 1 || mem.PullRows >= sp.rowsPer || mem.Total() > sp.bound) {
			return fmt.Errorf("under a bound of %d bytes: %v, want rounds of fewer rows than %d within the bound", sp.bound, mem, sp.rowsPer)
		}
		es := int64(sp.dt.Size())
		var in rs2d.Tensor
		zeroCopy := sp.zeroCopy || slices.Contains(sp.zeroCopyRanks, r.Comm.Rank())
		if zeroCopy {
			if in, err = rs.Input(m); err != nil {
				return err
			}
		} else {
			p, err := dev.Alloc(int64(m*sp.n)*es + 16)
			if err != nil {
				return err
			}
			defer dev.Free(p)
			in = rs2d.Tensor{Ptr: p, Rows: m, Cols: sp.n, DType: sp.dt}
			if sp.inOffset != nil {
				in.Ptr = p.Add(sp.inOffset[r.Comm.Rank()])
			}
			if sp.register {
				if err := rs.Register(ctx, in); err != nil {
					return err
				}
			}
		}
		outPtr, err := dev.Alloc(int64(sp.rowsPer*sp.n) * es)
		if err != nil {
			return err
		}
		defer dev.Free(outPtr)
		out := rs2d.Tensor{Ptr: outPtr, Rows: sp.rowsPer, Cols: sp.n, DType: sp.dt}
		s, err := dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		for c := range sp.calls {
			rows := sp.rowsOf(c)
			in.Rows, out.Rows = rows*ws, rows
			if zeroCopy {
				if in, err = rs.Input(rows * ws); err != nil {
					return err
				}
			}
			got := make([]byte, out.Bytes())
			staging, err := writeInput(dev, s, in, inputs[c][r.Comm.Rank()], sp.register)
			if err != nil {
				return err
			}
			if staging != 0 {
				defer dev.Free(staging)
			}
			if err := dev.CopyToDevice(out.Ptr, check.Poison(sp.dt, rows*sp.n)); err != nil {
				return err
			}
			if err := rs.ReduceScatter(ctx, in, out, s); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			if err := dev.CopyToHost(got, out.Ptr); err != nil {
				return err
			}
			if rep := check.ReduceScatter(sp.dt, inputs[c], r.Comm.Rank(), rows, sp.n).Compare(got, rs.Roundings()); !rep.OK() {
				return fmt.Errorf("call %d: %v", c, rep)
			}
		}
		return nil
	})
	if sp.wantErr != nil {
		require.ErrorIs(t, err, sp.wantErr)
		return
	}
	require.NoError(t, err)
}

// launched reports whether names (a late device's kernels) holds a kernel
// whose name starts with prefix.
func launched(names *sync.Map, prefix string) bool {
	found := false
	names.Range(func(k, _ any) bool { found = found || strings.HasPrefix(k.(string), prefix); return true })
	return found
}

// writeInput writes rows into in: a registered input on s, by a device
// copy from a staging buffer that it returns (a late rank's input is then
// late on its stream, as a producer's would be), any other at once.
func writeInput(dev device.Device, s device.Stream, in rs2d.Tensor, rows []byte, onStream bool) (device.Ptr, error) {
	if !onStream {
		return 0, dev.CopyToDevice(in.Ptr, rows)
	}
	staging, err := dev.Alloc(int64(len(rows)))
	if err != nil {
		return 0, err
	}
	if err := dev.CopyToDevice(staging, rows); err != nil {
		return 0, errors.Join(err, dev.Free(staging))
	}
	if err := dev.Copy(s, in.Ptr, staging, int64(len(rows))); err != nil {
		return 0, errors.Join(err, dev.Free(staging))
	}
	return staging, nil
}

func TestPullShapesAndDtypes(t *testing.T) {
	shapes := []bootstrap.Shape{{Nodes: 1, LocalSize: 1}, {Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 4},
		{Nodes: 2, LocalSize: 2}, {Nodes: 2, LocalSize: 4}, {Nodes: 1, LocalSize: 8}, {Nodes: 3, LocalSize: 3}}
	for _, shape := range shapes {
		for _, dt := range dtype.All {
			for _, size := range []struct{ rowsPer, n int }{{1, 7}, {33, 129}, {16, 64}} {
				for _, zc := range []bool{true, false} {
					for _, oneShot := range []int64{-1, 0} {
						t.Run(fmt.Sprintf("%v/%v/rows%d/n%d/zerocopy=%v/oneshot=%v", shape, dt, size.rowsPer, size.n, zc, oneShot == 0), func(t *testing.T) {
							t.Parallel()
							run(t, spec{shape: shape, dt: dt, rowsPer: size.rowsPer, n: size.n, calls: 2, zeroCopy: zc, oneShot: oneShot})
						})
					}
				}
			}
		}
	}
}

// The handshakes hold: a rank whose input is late is waited for before
// anyone reads it (else its peers would sum its old rows), and a rank whose
// reads are late is waited for before its peers' calls end (else they would
// write their next rows into the inputs it still reads). int32, bit for bit,
// calls in a row on fresh data, under both signal protocols.
func TestPullHandshakes(t *testing.T) {
	for _, c := range []struct {
		name  string
		late  late
		shape bootstrap.Shape
		zc    bool
	}{
		{"input late", late{copies: true}, bootstrap.Shape{Nodes: 1, LocalSize: 3}, false},
		{"reads late", late{reads: true}, bootstrap.Shape{Nodes: 1, LocalSize: 3}, true},
		{"reads late/2x2", late{reads: true}, bootstrap.Shape{Nodes: 2, LocalSize: 2}, true},
	} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/graphs=%v", c.name, graphs), func(t *testing.T) {
				t.Parallel()
				l := c.late
				l.delay = 40 * time.Millisecond
				run(t, spec{shape: c.shape, dt: dtype.I32, rowsPer: 2, n: 24, calls: 4, zeroCopy: c.zc, graphs: graphs, late: &l, oneShot: -1})
			})
		}
	}
}

// Under MaxSymmetricBytes the call goes in rounds through staging sets:
// every shape and dtype, rounds that do not divide the block, fresh data
// every call, a rank whose reads are late (a round's set must not be
// overwritten before every peer read it).
func TestPullInRounds(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}, {Nodes: 3, LocalSize: 3}} {
		for _, dt := range dtype.All {
			t.Run(fmt.Sprintf("%v/%v", shape, dt), func(t *testing.T) {
				t.Parallel()
				// Rows of 4 KiB: the data, not the pads, sets the memory.
				n := 4096/dt.Size() + 1
				run(t, spec{shape: shape, dt: dt, rowsPer: 13, n: n, calls: 3, bound: boundFor(shape, 13, n*dt.Size(), 4)})
			})
		}
	}
	t.Run("reads late", func(t *testing.T) {
		t.Parallel()
		shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
		// Rounds of 2 rows: 5 a call, more than the staging sets.
		run(t, spec{shape: shape, dt: dtype.I32, rowsPer: 9, n: 1024, calls: 3, bound: boundFor(shape, 9, 4096, 4),
			late: &late{reads: true, delay: 20 * time.Millisecond}})
	})
	t.Run("bound below one row", func(t *testing.T) {
		w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 2}, world.SimOptions{})
		require.NoError(t, err)
		defer func() { require.NoError(t, w.Close()) }()
		err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) error {
			_, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 64, N: 1024, DType: dtype.F32, Engine: rs2d.EnginePull, MaxSymmetricBytes: 4096})
			if !errors.Is(err, device.ErrInvalidArgument) || !strings.Contains(err.Error(), "minimum") {
				return fmt.Errorf("a bound below one row: %v, want ErrInvalidArgument naming the minimum", err)
			}
			return nil
		})
		require.NoError(t, err)
	})
}

// A whole call on one node whose input is copied in goes in pieces (blocks
// of 128 MiB and more, pieces of at least 16 MiB of each; 8 KiB and 4 KiB
// here), each copied on the copy stream (the first by the copy engine, the
// others by SM copies) while the last one is pulled: up to the most pieces, uneven ones, fresh
// data and poisoned outputs, under both protocols, with a rank whose copies
// are late (its peers must wait for each of its pieces) or whose reads are;
// the pieces are taken (one launch each). It changes the piece size, so it
// runs alone (no t.Parallel).
func TestPullCopiedInPieces(t *testing.T) {
	defer pull.SetPieces(8<<10, 4<<10)()
	for _, c := range []struct {
		name       string
		shape      bootstrap.Shape
		dt         dtype.DType
		rowsPer, n int
		pieces     int
		late       late
	}{
		{"1x2/int32", bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, 5, 1024, 5, late{}},
		{"1x4/int32/most", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.I32, 40, 1024, 8, late{}},
		{"1x3/bf16/copies late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.BF16, 7, 4096, 7, late{copies: true, delay: 20 * time.Millisecond}},
		{"1x2/fp32/reads late", bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.F32, 11, 2048, 6, late{reads: true, delay: 20 * time.Millisecond}}, // 8 asked: 2 rows each, the last 1
		{"1x2/fp16/one piece", bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.F16, 1, 1024, 1, late{}},
		{"1x2/int32/below the block", bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, 1, 1024, 1, late{}},
	} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/graphs=%v", c.name, graphs), func(t *testing.T) {
				l := c.late
				var launches, smCopies atomic.Int64
				l.launches, l.smCopies = &launches, &smCopies
				const calls = 2
				run(t, spec{shape: c.shape, dt: c.dt, rowsPer: c.rowsPer, n: c.n, calls: calls, graphs: graphs, late: &l, oneShot: -1})
				require.Equal(t, int64(c.pieces*calls), launches.Load(), "rank 1's pull launches")
				require.Equal(t, c.pieces > 1, smCopies.Load() > 0, "rank 1's SM copies (the pieces after the first)")
			})
		}
	}
}

// A whole call on a node of more than two GPUs whose input is copied in
// goes in rounds staged in the symmetric input where its blocks are 32–128
// MiB (staging sets of up to 128 MiB; any block and sets of a few rows
// here): each round's rows copied into one of three sets on the copy
// stream while earlier rounds are pulled, the launches alternating between
// two streams. Even rounds, more rounds than sets, a symmetric input
// smaller than the staging asked for, fresh data and poisoned outputs,
// both protocols, a rank whose copies are late (its peers must wait for
// each round's) or whose reads are (no set is overwritten before every
// peer read it); the rounds are taken (one launch each) and copy only the
// peers' blocks. Above the block's bound, and on nodes of two GPUs, the
// call goes in pieces. It changes the thresholds, so it runs alone.
func TestPullCopiedInRounds(t *testing.T) {
	for _, c := range []struct {
		name       string
		shape      bootstrap.Shape
		dt         dtype.DType
		rowsPer, n int
		staging    int64
		rounds     int
		late       late
	}{
		{"1x3/int32", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.I32, 5, 1024, 6 * 4096, 5, late{}},       // a round of a row
		{"1x4/bf16", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.BF16, 40, 4096, 9 * 3 * 8192, 14, late{}}, // 3 rows a round
		{"1x3/bf16/copies late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.BF16, 7, 4096, 6 * 8192, 7, late{copies: true, delay: 20 * time.Millisecond}},
		{"1x3/fp32/reads late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.F32, 11, 2048, 6 * 2 * 8192, 6, late{reads: true, delay: 20 * time.Millisecond}},
		{"1x4/fp16/the input smaller", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.F16, 9, 1024, 1 << 30, 3, late{}}, // 36 rows: 4 a round
	} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/graphs=%v", c.name, graphs), func(t *testing.T) {
				defer pull.SetInRounds(1, 1<<40, c.staging)()
				l := c.late
				var launches, bytes atomic.Int64
				l.launches, l.copiedBytes = &launches, &bytes
				const calls = 3
				run(t, spec{shape: c.shape, dt: c.dt, rowsPer: c.rowsPer, n: c.n, calls: calls, graphs: graphs, late: &l, oneShot: -1})
				require.Equal(t, int64(c.rounds*calls), launches.Load(), "rank 1's pull launches")
				want := int64(calls*(c.shape.World()-1)*c.rowsPer*c.n)*int64(c.dt.Size()) + 16 // and the copy stream's first copy (Make)
				require.Equal(t, want, bytes.Load(), "rank 1's bytes copied in: the peers' blocks")
			})
		}
	}
	// Outside the blocks' bounds, or on two GPUs: a whole copy (one
	// launch) below the pieces' block, pieces from it (4 of the 64 KiB
	// blocks; rounds would take 16 launches on 3 GPUs, 8 on 2).
	for _, c := range []struct {
		name        string
		lws         int
		least, most int64
		pieces      int // the smallest piece (0: the default)
		launches    int
	}{
		{"below the block", 3, 1 << 20, 1 << 40, 0, 1},
		{"above the block", 3, 1, 16 << 10, 16 << 10, 4},
		{"two GPUs", 2, 1, 1 << 40, 16 << 10, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer pull.SetInRounds(c.least, c.most, 3*2*4096)()
			if c.pieces > 0 {
				defer pull.SetPieces(1, int64(c.pieces))()
			}
			var launches atomic.Int64
			l := late{launches: &launches}
			run(t, spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: c.lws}, dt: dtype.I32, rowsPer: 16, n: 1024, calls: 2, late: &l, oneShot: -1})
			require.Equal(t, int64(2*c.launches), launches.Load(), "rank 1's pull launches")
		})
	}
}

// An input whose base is not 16-byte aligned goes in the same rounds as
// any (the peers read the staging sets), on every rank or only some; a
// rank whose input is misaligned copies its own rows of each round into its
// output first and the kernel reads them there (rank 1's copied bytes count
// them), where its output is aligned. Copied-in rounds under both
// protocols, and rounds under a bound (which do not replay in graphs).
func TestPullMisalignedInputInRounds(t *testing.T) {
	const calls, rowsPer, n = 3, 40, 512
	dt := dtype.BF16
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
	block := int64(rowsPer*n) * int64(dt.Size())
	for _, c := range []struct {
		name     string
		offsets  []int64
		bound    int64
		launches int   // rank 1's per call
		own      int64 // rank 1's own rows copied per call
	}{
		{"every rank", []int64{2, 2, 2}, 0, 10, block},
		{"rank 1 only", []int64{0, 2, 0}, 0, 10, block},
		{"all but rank 1", []int64{6, 0, 14}, 0, 10, 0},
		{"every rank, under a bound", []int64{2, 2, 2}, boundFor(shape, rowsPer, n*dt.Size(), 4), 0, block},
	} {
		for _, graphs := range []bool{false, true} {
			if graphs && c.bound > 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/graphs=%v", c.name, graphs), func(t *testing.T) {
				defer pull.SetInRounds(1, 1<<40, 3*2*4*int64(n)*int64(dt.Size()))() // 4 rows a round: 10 rounds
				var launches, bytes atomic.Int64
				l := late{launches: &launches, copiedBytes: &bytes}
				run(t, spec{shape: shape, dt: dt, rowsPer: rowsPer, n: n, calls: calls, graphs: graphs, late: &l, oneShot: -1,
					inOffset: c.offsets, bound: c.bound})
				if c.launches > 0 {
					require.Equal(t, int64(c.launches*calls), launches.Load(), "rank 1's pull launches")
				}
				want := int64(calls) * (int64(shape.World()-1)*block + c.own)
				if c.bound == 0 {
					want += 16 // the copy stream's first copy (Make)
				}
				require.Equal(t, want, bytes.Load(), "rank 1's bytes copied: the peers' blocks and its own rows where misaligned")
			})
		}
	}
}

// Ranks may mix zero copy (Input) and copied-in inputs where the copied-in
// ones are copied in whole (the same layout of the symmetric input); where
// they go in rounds or pieces, the peers of the zero-copy rank would read
// rows nobody wrote, and where the zero-copy rank's block is pulled by the
// copy engine each side would wait for a handshake the other never makes:
// the first arrival finds the tags differ and the ranks fail with
// ErrInvalidArgument naming both. (On a GPU the kernel traps and the
// context is lost, ending the rounds' second lane too; the simulated device
// ends that lane's wait at its timeout, here 10 s.)
func TestPullMixedInputs(t *testing.T) {
	for _, c := range []struct {
		name    string
		lws     int
		rounds  bool  // the copied-in ranks' calls go in rounds (two lanes)
		pieces  int64 // the smallest piece, where they go in pieces
		ceMin   int64 // Tuning.CopyEnginePullBytes (0: the default, none here)
		wantErr error
	}{
		{"copied in whole", 3, false, 0, 0, nil},
		{"copied in in rounds", 3, true, 0, 0, device.ErrInvalidArgument},
		{"copied in in pieces", 2, false, 16 << 10, 0, device.ErrInvalidArgument},
		{"copied in whole, zero copy pulled by the copy engine", 2, false, 0, 1, device.ErrInvalidArgument},
		{"copied in in pieces, zero copy pulled by the copy engine", 2, false, 16 << 10, 1, device.ErrInvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rounds {
				defer pull.SetInRounds(1, 1<<40, 3*2*4*4096)()
			}
			if c.pieces > 0 {
				defer pull.SetPieces(1, c.pieces)()
			}
			sp := spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: c.lws}, dt: dtype.I32, rowsPer: 16, n: 1024, calls: 2,
				oneShot: -1, zeroCopyRanks: []int{1}, ceMin: c.ceMin, wantErr: c.wantErr}
			if c.rounds || c.ceMin > 0 {
				sp.waitTimeout = 10 * time.Second
			}
			run(t, sp)
		})
	}
}

// A whole call copied in leaves this rank's own blocks in the caller's
// input, where the kernel reads them: only the other blocks are copied
// (rank 1's copied bytes say so), whole, in pieces and in rounds, on one node
// (a middle rank's blocks in two runs) and across nodes, every dtype,
// fresh data and poisoned outputs, both protocols, with a rank whose
// copies or reads are late; rows that are not 16-byte multiples are copied
// whole. It changes the thresholds, so it runs alone.
func TestPullOwnRowsInPlace(t *testing.T) {
	defer pull.SetOwnInPlace(0)()
	for _, c := range []struct {
		name       string
		shape      bootstrap.Shape
		dt         dtype.DType
		rowsPer, n int
		pieces     bool
		late       late
		inPlace    bool
	}{
		{"1x2/int32", bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, 5, 64, false, late{}, true},
		{"1x3/bf16/copies late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.BF16, 7, 24, false, late{copies: true, delay: 20 * time.Millisecond}, true},
		{"1x4/fp16/reads late", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.F16, 3, 40, false, late{reads: true, delay: 20 * time.Millisecond}, true},
		{"1x4/fp32/pieces", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.F32, 12, 1024, true, late{}, true},
		{"1x3/int32/pieces, copies late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.I32, 9, 1024, true, late{copies: true, delay: 20 * time.Millisecond}, true},
		{"1x4/bf16/rounds", bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.BF16, 12, 1024, false, late{}, true},
		{"1x3/int32/rounds, reads late", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.I32, 9, 1024, false, late{reads: true, delay: 20 * time.Millisecond}, true},
		{"2x2/int32", bootstrap.Shape{Nodes: 2, LocalSize: 2}, dtype.I32, 4, 32, false, late{}, true},
		{"3x3/bf16", bootstrap.Shape{Nodes: 3, LocalSize: 3}, dtype.BF16, 2, 56, false, late{}, true},
		{"1x3/int32/rows of 12 bytes", bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.I32, 5, 3, false, late{}, false},
	} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/graphs=%v", c.name, graphs), func(t *testing.T) {
				if c.pieces {
					defer pull.SetPieces(8<<10, 4<<10)()
				}
				if strings.Contains(c.name, "rounds") {
					defer pull.SetInRounds(1, 1<<40, 9*4096*3)()
				}
				l := c.late
				var bytes atomic.Int64
				l.copiedBytes = &bytes
				const calls = 3
				run(t, spec{shape: c.shape, dt: c.dt, rowsPer: c.rowsPer, n: c.n, calls: calls, graphs: graphs, late: &l, oneShot: -1})
				// The node peers' blocks (every block where the rows are
				// copied whole), and the reduced blocks the rail sends to
				// the other nodes (the simulated IPC rail copies them).
				blocks := c.shape.World() + c.shape.Nodes - 1
				if c.inPlace {
					blocks -= c.shape.Nodes
				}
				want := int64(calls*blocks*c.rowsPer*c.n) * int64(c.dt.Size())
				if c.shape.Nodes == 1 {
					want += 16 // the copy stream's first copy (Make)
				}
				require.Equal(t, want, bytes.Load(), "rank 1's bytes copied in")
			})
		}
	}
}

// Below minOwnInPlace the own blocks stay in place only on one node of two
// GPUs (rank 1 of 1×2), where no rank's copy splits; not on 1×3 nor 2×2.
func TestPullOwnRowsInPlaceOnPairs(t *testing.T) {
	for _, c := range []struct {
		shape   bootstrap.Shape
		inPlace bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, false},
	} {
		t.Run(c.shape.String(), func(t *testing.T) {
			t.Parallel()
			var bytes atomic.Int64
			const calls, rowsPer, n = 2, 3, 32
			run(t, spec{shape: c.shape, dt: dtype.I32, rowsPer: rowsPer, n: n, calls: calls, late: &late{copiedBytes: &bytes}, oneShot: -1})
			blocks := c.shape.World() + c.shape.Nodes - 1 // and the rail's sends
			if c.inPlace {
				blocks -= c.shape.Nodes
			}
			want := int64(calls * blocks * rowsPer * n * 4)
			if c.shape.Nodes == 1 {
				want += 16 // the copy stream's first copy (Make)
			}
			require.Equal(t, want, bytes.Load(), "rank 1's bytes copied in")
		})
	}
}

// Blocks from bulkMinBytes up are read with the bulk kernels, smaller ones
// with the vector kernels (1 KiB here): the right rows either way, on
// 2 and 4 GPUs and for a block that is no multiple of 16 bytes (the bulk
// kernel then falls back to loads). It changes the threshold, so it runs
// alone.
func TestPullBulkFromItsSize(t *testing.T) {
	defer pull.SetBulkMinBytes(1 << 10)()
	for _, c := range []struct {
		name       string
		lws        int
		dt         dtype.DType
		rowsPer, n int
		kernel     string
	}{
		{"1x2/bf16/bulk", 2, dtype.BF16, 3, 512, "hc_pull_bulk_bf16_l2"},
		{"1x4/int32/bulk", 4, dtype.I32, 2, 300, "hc_pull_bulk_int32_l4"},
		{"1x4/fp16/odd bytes", 4, dtype.F16, 1, 1023, "hc_pull_bulk_fp16_l4"},
		{"1x2/fp32/vector", 2, dtype.F32, 1, 128, "hc_pull_fp32_l2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var names sync.Map
			run(t, spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: c.lws}, dt: c.dt, rowsPer: c.rowsPer, n: c.n, calls: 2, zeroCopy: true,
				late: &late{kernels: &names}, oneShot: -1})
			var got []string
			names.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
			require.Equal(t, []string{c.kernel}, got, "rank 1's kernels")
		})
	}
}

// Under a bound the rounds of a call whose blocks reach bulkRoundsMinBlock
// are read with the bulk kernels, however small each round (below
// bulkMinBytes); a call of smaller blocks, with the vector kernels: the
// right rows either way. It changes the thresholds, so it runs alone.
func TestPullRoundsBulkFromTheBlock(t *testing.T) {
	const rowsPer, n = 12, 256 // blocks of 12 KiB of int32, rounds of 3 rows
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	for _, c := range []struct {
		name   string
		from   int64
		kernel string
	}{
		{"bulk", 12 << 10, "hc_pull_bulk_int32_l4"},
		{"vector", 12<<10 + 1, "hc_pull_int32_l4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer pull.SetBulkRoundsMinBlock(c.from)()
			var names sync.Map
			run(t, spec{shape: shape, dt: dtype.I32, rowsPer: rowsPer, n: n, calls: 2, bound: boundFor(shape, rowsPer, n*4, 4),
				late: &late{kernels: &names}})
			var got []string
			names.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
			require.Contains(t, got, c.kernel, "rank 1's kernels")
			require.Len(t, got, 1, "rank 1's kernels: %v", got)
		})
	}
}

// boundFor is a MaxSymmetricBytes that leaves the pull engine rounds of
// about rows/div rows of rowBytes bytes on shape: the direct path's input
// (rowsPer rows per rank) would not fit.
func boundFor(shape bootstrap.Shape, rowsPer int, rowBytes int, div int) int64 {
	world := int64(shape.World())
	round := int64(max(1, rowsPer/div))
	rail := int64(0)
	if shape.Nodes > 1 {
		rail = 3 * int64(shape.Nodes) * ((round*int64(rowBytes) + 255) / 256 * 256)
	}
	return 2*world*round*int64(rowBytes) + rail + 16<<10
}

func TestPullHundredCalls(t *testing.T) {
	for _, graphs := range []bool{false, true} {
		for _, oneShot := range []int64{-1, 0} {
			t.Run(fmt.Sprintf("graphs=%v/oneshot=%v", graphs, oneShot == 0), func(t *testing.T) {
				t.Parallel()
				run(t, spec{shape: bootstrap.Shape{Nodes: 2, LocalSize: 2}, dt: dtype.I32, rowsPer: 3, n: 17, calls: 100, zeroCopy: true,
					graphs: graphs, oneShot: oneShot})
			})
		}
	}
}

// Small calls go in one shot, larger ones are pulled, in the same context
// and in any order: the landing slots alternate by launch parity whatever
// launches came between (every launch waits for its peers'), and a rank
// whose kernels are late is waited for, not overwritten. Fresh data every
// call, int32 bit for bit, both protocols, on one node and across two; the
// kernels taken are the ones the sizes ask for.
func TestPullOneShotBesidePull(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 3}, {Nodes: 2, LocalSize: 2}} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/graphs=%v", shape, graphs), func(t *testing.T) {
				t.Parallel()
				var names sync.Map
				// Rows of 256 bytes, slots of 512: 1 or 2 rows in one shot, 5 pulled.
				run(t, spec{shape: shape, dt: dtype.I32, rowsPer: 5, n: 64, calls: 9, graphs: graphs, oneShot: 512,
					rowsPerCall: []int{1, 1, 5, 2, 5, 5, 1}, late: &late{reads: true, delay: 10 * time.Millisecond, kernels: &names}})
				for _, prefix := range []string{"hc_oneshot_int32_", "hc_pull_int32_"} {
					require.True(t, launched(&names, prefix), "rank 1 launched no %s kernel", prefix)
				}
			})
		}
	}
}

// A registered input, or the context's symmetric input (zero copy),
// pulled by the copy engine: chunks of 48 bytes through three slots per
// peer, the last two chunks of each block halved down to 16 bytes (many
// chunks, the slots reused within and across calls), on one node and
// across two, both protocols, with a rank whose copies are late (its peers
// must not end their calls, and overwrite their inputs, before it read
// them). The same calls with the copy engine's pulls off make fewer device
// copies (the rail's, across nodes): the counts show which path ran.
func TestPullByTheCopyEngine(t *testing.T) {
	for _, c := range []struct {
		shape      bootstrap.Shape
		dt         dtype.DType
		rowsPer, n int
		zeroCopy   bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, 3, 100, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.BF16, 5, 129, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, dtype.F32, 2, 64, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.F16, 4, 72, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, 3, 100, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.BF16, 4, 72, true},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, dtype.F32, 2, 64, true},
	} {
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/%v/zerocopy=%v/graphs=%v", c.shape, c.dt, c.zeroCopy, graphs), func(t *testing.T) {
				t.Parallel()
				copies := map[int64]int64{}
				for _, ceMin := range []int64{-1, 1} {
					var n atomic.Int64
					run(t, spec{shape: c.shape, dt: c.dt, rowsPer: c.rowsPer, n: c.n, calls: 4, register: !c.zeroCopy, zeroCopy: c.zeroCopy,
						graphs: graphs, oneShot: -1, ceMin: ceMin, ceChunk: 48, late: &late{copies: true, delay: 5 * time.Millisecond, copied: &n}})
					copies[ceMin] = n.Load()
				}
				require.Greater(t, copies[1], copies[-1], "rank 1's copies with the copy engine's pulls on and off")
			})
		}
	}
}

// A registered input is pulled by the copy engine only where every rank's
// buffer lies in an allocation of whole large pages: the tests' buffers are
// M × N elements and 16 bytes, whole pages of 16 bytes and not of 4 KiB;
// and where only rank 1's device has pages of 4 KiB, every rank pulls with
// the kernel (the ranks agree at Register: a rank pulling by the copy
// engine among ranks pulling by the kernel would fail at the arrival). The
// device copies with the copy engine's pulls asked for show which path
// ran, against the same calls with them off; the sums are checked either
// way.
func TestPullByTheCopyEngineOnlyOnWholePages(t *testing.T) {
	for _, c := range []struct {
		name           string
		pages, rank1   int64 // every device's large page, rank 1's where not 0
		wantCopyEngine bool
	}{
		{"no pages", 0, 0, true},
		{"whole pages", 16, 0, true},
		{"not whole pages", 4096, 0, false},
		{"not whole pages on rank 1", 0, 4096, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			copies := map[int64]int64{}
			for _, ceMin := range []int64{-1, 1} {
				var n atomic.Int64
				run(t, spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: 2}, dt: dtype.I32, rowsPer: 3, n: 100, calls: 3, register: true,
					oneShot: -1, ceMin: ceMin, ceChunk: 48, pageBytes: c.pages, late: &late{copied: &n, pageBytes: c.rank1}})
				copies[ceMin] = n.Load()
			}
			if c.wantCopyEngine {
				require.Greater(t, copies[1], copies[-1], "rank 1's copies with the copy engine's pulls on and off")
			} else {
				require.Equal(t, copies[-1], copies[1], "rank 1's copies with the copy engine's pulls on and off")
			}
		})
	}
}

// Whole calls from Tuning.RingFromBytes go around the ring, smaller ones
// in one shot or pulled, in the same context and in any order, with the
// ranks' inputs in the symmetric input, in buffers of their own
// (registered or not) or mixed; FIFOs of 3 channels of 2 slots of 64
// bytes (many messages, the slots reused within and across calls), a rank
// whose kernels are late; int32 bit for bit, floats within the ring's
// roundings, under either signal protocol. The kernels taken are the ones
// the sizes ask for: the ring's with it on, none of it with it off or off
// one node of more than two GPUs.
func TestPullAroundTheRing(t *testing.T) {
	for _, c := range []struct {
		shape    bootstrap.Shape
		dt       dtype.DType
		inputs   string
		graphs   bool
		ringMin  int64
		wantRing bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.I32, "zero copy", false, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.BF16, "plain", false, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.F16, "registered", false, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.F32, "mixed", false, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.I32, "zero copy", false, -1, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, dtype.I32, "zero copy", true, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 3}, dtype.BF16, "mixed", true, 0, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, dtype.I32, "zero copy", false, 0, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, dtype.I32, "zero copy", false, 0, false},
	} {
		t.Run(fmt.Sprintf("%v/%v/%s/graphs=%v/ring=%v", c.shape, c.dt, c.inputs, c.graphs, c.ringMin >= 0), func(t *testing.T) {
			t.Parallel()
			var names sync.Map
			// Rows of 64 elements; slots of 2 rows' bytes: 1 row in one
			// shot, from 6 rows around the ring, 3 pulled.
			row := int64(64 * c.dt.Size())
			ringMin := c.ringMin
			if ringMin == 0 {
				ringMin = 6 * row
			}
			sp := spec{shape: c.shape, dt: c.dt, rowsPer: 7, n: 64, calls: 8, graphs: c.graphs, oneShot: 2 * row,
				ringMin: ringMin, ring: [3]int{3, 2, 64}, rowsPerCall: []int{6, 1, 7, 3, 6},
				late: &late{reads: true, delay: 5 * time.Millisecond, kernels: &names}}
			switch c.inputs {
			case "zero copy":
				sp.zeroCopy = true
			case "registered":
				sp.register = true
			case "mixed":
				sp.zeroCopyRanks = []int{0, 2}
			}
			run(t, sp)
			require.Equal(t, c.wantRing, launched(&names, "hc_ring_"), "rank 1's ring kernels")
			require.True(t, launched(&names, "hc_pull_"), "rank 1 launched no pull kernel")
		})
	}
}

// Around the ring, an input whose start is not 16-byte aligned is copied
// into the symmetric input first (the ring reads it from there with
// vectors), and an aligned one is read in place: rank 1's device copies
// with its input 2 bytes off and aligned, the sums checked either way.
func TestPullRingMisalignedInput(t *testing.T) {
	copies := map[int64]int64{}
	for _, off := range []int64{2, 0} {
		var n atomic.Int64
		run(t, spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: 4}, dt: dtype.BF16, rowsPer: 6, n: 64, calls: 3, oneShot: -1,
			ringMin: 1, ring: [3]int{3, 2, 64}, inOffset: []int64{0, off, 4 * off, 0}, late: &late{copied: &n}})
		copies[off] = n.Load()
	}
	// (Aligned, the one copy is the copy stream's first, at Make.)
	require.Equal(t, int64(3), copies[2]-copies[0], "rank 1's device copies with its input 2 bytes off (%d) and aligned (%d): one more per call", copies[2], copies[0])
}

// Chunks by size (Tuning.CopyEnginePullChunk 0), the bounds shrunk so that
// calls of different sizes take different chunks within the same slots:
// smaller calls copy chunks smaller than a slot.
func TestPullByTheCopyEngineChunksBySize(t *testing.T) {
	defer pull.SetChunkBySize(32, 256)()
	for _, graphs := range []bool{false, true} {
		t.Run(fmt.Sprintf("graphs=%v", graphs), func(t *testing.T) {
			run(t, spec{shape: bootstrap.Shape{Nodes: 1, LocalSize: 3}, dt: dtype.F32, rowsPer: 12, n: 40, calls: 6,
				rowsPerCall: []int{12, 3, 7}, register: true, graphs: graphs, oneShot: -1, ceMin: 1,
				late: &late{copies: true, delay: 5 * time.Millisecond}})
		})
	}
}

// A block's chunks: whole ones while two or more are left, then halves of
// what is left down to a 32nd of a chunk; 16-byte multiples but the last,
// together the block.
func TestCopyEngineChunks(t *testing.T) {
	for _, c := range []struct{ block, chunk int64 }{
		{1 << 30, 64 << 20}, {1 << 30, 128 << 20}, {256 << 20, 64 << 20}, {1000, 48}, {48, 48}, {100, 64}, {(1 << 30) + 4096*2, 64 << 20},
	} {
		var sizes []int64
		sum := int64(0)
		for sum < c.block {
			n := pull.CENext(sum, c.block, c.chunk)
			require.Positive(t, n)
			require.LessOrEqual(t, n, c.chunk)
			sizes = append(sizes, n)
			sum += n
		}
		require.Equal(t, c.block, sum, "%+v: %v", c, sizes)
		least := max(16, c.chunk/32/16*16)
		for i, n := range sizes[:len(sizes)-1] {
			require.Zero(t, n%16, "%+v: chunk %d of %v", c, i, sizes)
			require.GreaterOrEqual(t, n, least, "%+v: chunk %d of %v", c, i, sizes)
		}
		if c.block >= 2*c.chunk { // the tail is short: at most the least chunk, after halves
			require.LessOrEqual(t, sizes[len(sizes)-1], least, "%+v: %v", c, sizes)
		}
	}
}

// Input is refused where it cannot serve, and a call whose output or input
// only partly lies in the symmetric input is refused before any work.
func TestPullInputRefusals(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	const m, n = 8, 16
	err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) error {
		other, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.F32, Engine: rs2d.EngineSM})
		if err != nil {
			return err
		}
		if _, err := other.Input(m); !errors.Is(err, device.ErrNotSupported) {
			return fmt.Errorf("Input with the SM engine: %v, want ErrNotSupported", err)
		}
		if err := other.Close(); err != nil {
			return err
		}
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.F32, Engine: rs2d.EnginePull})
		if err != nil {
			return err
		}
		defer rs.Close()
		for _, rows := range []int{0, m + 2} {
			if _, err := rs.Input(rows); !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("Input(%d): %v, want ErrInvalidArgument", rows, err)
			}
		}
		in, err := rs.Input(m)
		if err != nil {
			return err
		}
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		defer s.Close()
		front, err := rs.Input(m / 2)
		if err != nil {
			return err
		}
		inside := rs2d.Tensor{Ptr: in.Ptr.Add(int64(m/2*n) * 4), Rows: m / 4, Cols: n, DType: dtype.F32}
		if err := rs.ReduceScatter(ctx, front, inside, s); !errors.Is(err, device.ErrInvalidArgument) || !strings.Contains(err.Error(), "symmetric input") {
			return fmt.Errorf("output in the symmetric input: %v, want ErrInvalidArgument", err)
		}
		outPtr, err := r.Dev.Alloc(int64(m / 2 * n * 4))
		if err != nil {
			return err
		}
		defer r.Dev.Free(outPtr)
		out := rs2d.Tensor{Ptr: outPtr, Rows: m / 2, Cols: n, DType: dtype.F32}
		shifted := rs2d.Tensor{Ptr: in.Ptr.Add(4 * n), Rows: m / 2, Cols: n, DType: dtype.F32}
		half := out
		half.Rows = m / 4
		if err := rs.ReduceScatter(ctx, shifted, half, s); !errors.Is(err, device.ErrInvalidArgument) || !strings.Contains(err.Error(), "symmetric input") {
			return fmt.Errorf("input inside the symmetric input at an offset: %v, want ErrInvalidArgument naming it", err)
		}
		return nil
	})
	require.NoError(t, err)
}

// The ring's shape: at the default, 128 channels of 2 slots of 256 KiB
// where a block of MaxM rows reaches 128 MiB, a quarter of that below; the
// default's channels capped by the SMs (an asked count is kept); asked
// fields kept, the others defaulted; never below the least block.
func TestPullRingResolved(t *testing.T) {
	const cols = 4096
	spec := func(perRank int64) intranode.Spec {
		return intranode.Spec{Place: symm.Place{Shape: bootstrap.Shape{Nodes: 1, LocalSize: 4}}, DType: dtype.BF16,
			Cols: cols, MaxRows: int(perRank / (2 * cols))}
	}
	narrow := ring.Shape{Channels: 64, Slots: 2, ChunkBytes: 128 << 10}
	for _, c := range []struct {
		name    string
		asked   pull.Ring
		perRank int64
		want    ring.Shape
	}{
		{"wide", pull.Ring{}, 2 << 30, ring.Shape{Channels: 128, Slots: 2, ChunkBytes: 256 << 10}},
		{"wide on 108 SMs", pull.Ring{SMs: 108}, 2 << 30, ring.Shape{Channels: 108, Slots: 2, ChunkBytes: 256 << 10}},
		{"narrow on 32 SMs", pull.Ring{SMs: 32}, 256 << 20, ring.Shape{Channels: 32, Slots: 2, ChunkBytes: 128 << 10}},
		{"channels asked beyond the SMs", pull.Ring{SMs: 32, Shape: ring.Shape{Channels: 96}}, 2 << 30, ring.Shape{Channels: 96, Slots: 2, ChunkBytes: 256 << 10}},
		{"chunk asked", pull.Ring{Shape: ring.Shape{ChunkBytes: 1 << 20}}, 2 << 30, ring.Shape{Channels: 128, Slots: 2, ChunkBytes: 1 << 20}},
		{"narrow", pull.Ring{}, 512<<20 - 1<<20, narrow},
		{"at the least block", pull.Ring{}, 4 * (8 << 20), narrow},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.asked.Resolved(spec(c.perRank))
			require.Equal(t, int64(8<<20), r.MinBlock)
			require.Equal(t, c.want, r.Shape)
		})
	}
	require.Zero(t, pull.Ring{}.Resolved(spec(4*(8<<20)-1<<20)).MinBlock, "blocks below the least: never")
	require.Zero(t, pull.Ring{MinBlock: -1}.Resolved(spec(2<<30)).MinBlock, "off: never")
}
