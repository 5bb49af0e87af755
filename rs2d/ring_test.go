package rs2d_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// The world shapes the ring runs on (1×3: a ring of three, where one FIFO
// slot per hop matters; 1×8: the longest chain).
var ringShapes = []bootstrap.Shape{
	{Nodes: 1, LocalSize: 1}, {Nodes: 1, LocalSize: 2}, {Nodes: 1, LocalSize: 3}, {Nodes: 1, LocalSize: 4},
	{Nodes: 2, LocalSize: 2}, {Nodes: 2, LocalSize: 1}, {Nodes: 4, LocalSize: 1}, {Nodes: 2, LocalSize: 4},
	{Nodes: 1, LocalSize: 8},
}

// ringKnobs is a small ring whose credits are busy: two channels, slots
// slots per peer, chunks of three elements (which divide neither a block
// of 5 × 7 elements nor a channel's share of it).
func ringKnobs(dt dtype.DType, slots int) rs2d.Tuning {
	return rs2d.Tuning{RingChannels: 2, RingSlots: slots, RingChunkBytes: 3 * int64(dt.Size())}
}

func wantRing(slots int) func(*rs2d.Context) error {
	return func(rs *rs2d.Context) error {
		if m := rs.Memory(); m.Engine != rs2d.EngineRing || rs.Config().Engine != rs2d.EngineRing || m.Ring.Slots != slots {
			return fmt.Errorf("context runs %v (config %v) with %d slots, want the ring with %d", m.Engine, rs.Config().Engine, m.Ring.Slots, slots)
		}
		return nil
	}
}

// Every world shape and dtype, one and two slots, chunks that divide
// nothing: int32 bit for bit, floats against fp64 within the ring's
// roundings (rs.Roundings), outputs poisoned first.
func TestRingShapesDtypesAndSlots(t *testing.T) {
	for _, shape := range ringShapes {
		for _, dt := range dtype.All {
			for _, slots := range []int{1, 2} {
				t.Run(fmt.Sprintf("%v/%v/slots%d", shape, dt, slots), func(t *testing.T) {
					t.Parallel()
					runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: 5, n: 7, calls: 3,
						cfg: rs2d.Config{Engine: rs2d.EngineRing}, knobs: ringKnobs(dt, slots), inspect: wantRing(slots)})
				})
			}
		}
	}
}

// railBound is a MaxSymmetricBytes under which the ring's rail carries
// rounds of two rows of n elements of dt (rows of 200 or 400 bytes: two
// fill a 256-byte-aligned block that three would not).
func railBound(t *testing.T, shape bootstrap.Shape, dt dtype.DType, m, n int, knobs rs2d.Tuning) int64 {
	t.Helper()
	unbounded, err := rs2d.MemoryOf(rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineRing, Tuning: knobs}, shape, 0)
	require.NoError(t, err)
	row := int64(n * dt.Size())
	block := (2*row + 255) / 256 * 256
	require.Less(t, block, 3*row, "two rows, not three, per block")
	return unbounded.Node + internode.RailBytes(internode.Auto, symm.Growing, shape.Nodes, block)
}

// More than one node under a bound: the rail goes in rounds of two rows of
// five (2, 2, 1), with the receive sets alternating by round; the ring
// named fits in the bound.
func TestRingRailRoundsUnderABound(t *testing.T) {
	for si, shape := range []bootstrap.Shape{{Nodes: 2, LocalSize: 1}, {Nodes: 2, LocalSize: 2}, {Nodes: 4, LocalSize: 1}, {Nodes: 2, LocalSize: 4}} {
		for di, dt := range dtype.All {
			if raceSubset && si%len(dtype.All) != di {
				continue // under -race: each shape once, the dtypes in turn
			}
			t.Run(fmt.Sprintf("%v/%v", shape, dt), func(t *testing.T) {
				t.Parallel()
				const rowsPer, n = 5, 100
				knobs := ringKnobs(dt, 1)
				bound := railBound(t, shape, dt, rowsPer*shape.World(), n, knobs)
				runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: rowsPer, n: n, calls: 3,
					cfg: rs2d.Config{Engine: rs2d.EngineRing, MaxSymmetricBytes: bound}, knobs: knobs,
					inspect: func(rs *rs2d.Context) error {
						m := rs.Memory()
						if err := wantRing(1)(rs); err != nil {
							return err
						}
						if m.RailRows != 2 || m.Total() > bound {
							return fmt.Errorf("memory %v: want rounds of 2 rows within %d bytes", m, bound)
						}
						return nil
					}})
			})
		}
	}
}

// 100 calls (20 under -race) in a row on one context, fresh data each, one slot, rail
// rounds: the credits and the round counter keep growing across calls.
func TestRingHundredCalls(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.I32, dtype.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
			const rowsPer, n = 5, 100
			knobs := ringKnobs(dt, 1)
			calls := 100
			if raceSubset {
				calls = 20 // the one slot still wraps every call; the detector costs ten times as much per call
			}
			runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: rowsPer, n: n, calls: calls,
				cfg:   rs2d.Config{Engine: rs2d.EngineRing, MaxSymmetricBytes: railBound(t, shape, dt, rowsPer*shape.World(), n, knobs)},
				knobs: knobs, inspect: wantRing(1)})
		})
	}
}

// The path New takes under a bound, and its memory: the direct path while
// it fits, the pull engine in rounds (within the bound) when Auto's direct
// path does not, the ring when named, errors for a named direct engine,
// GEMM overlap, and a bound below Auto's minimum (the smaller of the pull
// engine's and the ring's), which the error names exactly.
func TestMemoryBoundPicksThePath(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 1}, {Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 4}, {Nodes: 4, LocalSize: 1}} {
		t.Run(shape.String(), func(t *testing.T) {
			cfg := rs2d.Config{MaxM: 64 * shape.World(), N: 4096, DType: dtype.BF16}
			direct, err := rs2d.MemoryOf(cfg, shape, 132)
			require.NoError(t, err)
			want := rs2d.EnginePull // Auto on nodes of several GPUs
			if shape.LocalSize == 1 {
				want = rs2d.EngineSM
			}
			require.Equal(t, want, direct.Engine)
			if shape.World() == 1 {
				// A call is one device copy: no scatter buffer, nothing to bound.
				require.Less(t, direct.Node, int64(cfg.MaxM*cfg.N*2), "a world of one rank holds no scatter buffer")
				return
			}
			require.GreaterOrEqual(t, direct.Node, int64(cfg.MaxM*cfg.N*2), "the scatter buffer holds MaxM × N")

			at := cfg
			at.MaxSymmetricBytes = direct.Total()
			m, err := rs2d.MemoryOf(at, shape, 132)
			require.NoError(t, err)
			require.Equal(t, direct, m, "a bound the direct path meets keeps it")

			at.MaxSymmetricBytes = direct.Total() - 1
			rounds, err := rs2d.MemoryOf(at, shape, 132)
			require.NoError(t, err)
			require.Equal(t, rs2d.EnginePull, rounds.Engine, "Auto under a bound: the pull engine in rounds")
			require.Positive(t, rounds.PullRows)
			// (All 64 rows in one round where the direct path's one-shot
			// slots took the room the rounds' staging sets need.)
			require.LessOrEqual(t, rounds.PullRows, 64)
			require.LessOrEqual(t, rounds.Total(), at.MaxSymmetricBytes)
			asRing := at
			asRing.Engine = rs2d.EngineRing
			ring, err := rs2d.MemoryOf(asRing, shape, 132)
			require.NoError(t, err)
			require.Equal(t, rs2d.EngineRing, ring.Engine)
			require.LessOrEqual(t, ring.Total(), at.MaxSymmetricBytes)

			// A named direct engine under a bound just below its own
			// direct path: refused.
			named := cfg
			named.Engine = rs2d.EngineSM
			smDirect, err := rs2d.MemoryOf(named, shape, 132)
			require.NoError(t, err)
			named.MaxSymmetricBytes = smDirect.Total() - 1
			_, err = rs2d.MemoryOf(named, shape, 132)
			require.ErrorIs(t, err, device.ErrInvalidArgument)
			// With overlap the direct path is the copy engine's, whose pads
			// differ: bound it just below its own.
			overlap := cfg
			overlap.OverlapWithGEMM = true
			copyDirect, err := rs2d.MemoryOf(overlap, shape, 132)
			require.NoError(t, err)
			overlap.MaxSymmetricBytes = copyDirect.Total() - 1
			_, err = rs2d.MemoryOf(overlap, shape, 132)
			require.ErrorIs(t, err, device.ErrNotSupported)

			at.MaxSymmetricBytes = 1
			_, err = rs2d.MemoryOf(at, shape, 132)
			require.ErrorIs(t, err, device.ErrInvalidArgument)
			found := regexp.MustCompile(`minimum of (\d+) bytes`).FindStringSubmatch(err.Error())
			require.NotNil(t, found, "the error names the minimum: %v", err)
			least, err := strconv.ParseInt(found[1], 10, 64)
			require.NoError(t, err)
			at.MaxSymmetricBytes = least
			m, err = rs2d.MemoryOf(at, shape, 132)
			require.NoError(t, err, "the minimum itself fits")
			require.LessOrEqual(t, m.Total(), least)
			at.MaxSymmetricBytes = least - 1
			_, err = rs2d.MemoryOf(at, shape, 132)
			require.ErrorIs(t, err, device.ErrInvalidArgument, "one byte less does not")
		})
	}
	_, err := rs2d.MemoryOf(rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.EngineRing, OverlapWithGEMM: true}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrNotSupported, "the ring with GEMM overlap")
	_, err = rs2d.MemoryOf(rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.EngineNVLS, Graphs: true}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrNotSupported, "the NVLS engine with CUDA graphs")
	ringGraphs := rs2d.Config{MaxM: 1024, N: 1024, DType: dtype.F32, Engine: rs2d.EngineRing, Graphs: true}
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 2}} {
		_, err = rs2d.MemoryOf(ringGraphs, shape, 0)
		require.NoError(t, err, "the ring with CUDA graphs on %v (its launches replay)", shape)
	}
	ringGraphs.MaxSymmetricBytes = 4 << 20 // the rail in rounds across nodes: they do not replay
	m, err := rs2d.MemoryOf(ringGraphs, bootstrap.Shape{Nodes: 2, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrNotSupported, "the ring in rounds with CUDA graphs: %v", m)
	_, err = rs2d.MemoryOf(rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, MaxSymmetricBytes: -1}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrInvalidArgument, "a negative bound")
	_, err = rs2d.MemoryOf(rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.EngineRing, Tuning: rs2d.Tuning{RingSlots: -1}}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrInvalidArgument, "negative ring slots")
	_, err = rs2d.MemoryOf(rs2d.Config{MaxM: 4, N: 4, DType: dtype.F32, Engine: rs2d.EngineRing, Tuning: rs2d.Tuning{RingChunkBytes: 6}}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, device.ErrInvalidArgument, "a chunk of a element and a half")
}

// What New allocates is what MemoryOf says, on every rank, for both paths;
// and New refuses what MemoryOf refuses, before any collective step.
func TestMemoryIsWhatNewAllocates(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w := simWorld(t, shape)
	ctx := testContext(t)
	cfg := rs2d.Config{MaxM: 16 * shape.World(), N: 1000, DType: dtype.F32}
	sms := w.Ranks[0].Dev.Info().SMs
	direct, err := rs2d.MemoryOf(cfg, shape, sms)
	require.NoError(t, err)
	bounded := cfg
	bounded.MaxSymmetricBytes = direct.Total() / 3
	rounds, err := rs2d.MemoryOf(bounded, shape, sms)
	require.NoError(t, err)
	require.Equal(t, rs2d.EnginePull, rounds.Engine)
	require.Less(t, rounds.RailRows, 16, "the call goes in rounds")
	asRing := bounded
	asRing.Engine = rs2d.EngineRing
	ring, err := rs2d.MemoryOf(asRing, shape, sms)
	require.NoError(t, err)
	require.Equal(t, rs2d.EngineRing, ring.Engine)
	require.Less(t, ring.RailRows, 16, "the rail goes in rounds")
	tooSmall := cfg
	tooSmall.MaxSymmetricBytes = 100
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		if _, err := rs2d.New(ctx, r.Comm, r.Dev, tooSmall); !errors.Is(err, device.ErrInvalidArgument) {
			return fmt.Errorf("a bound below every path's minimum: %v", err)
		}
		for _, c := range []struct {
			cfg  rs2d.Config
			want rs2d.Memory
		}{{cfg, direct}, {bounded, rounds}, {asRing, ring}} {
			rs, err := rs2d.New(ctx, r.Comm, r.Dev, c.cfg)
			if err != nil {
				return err
			}
			heap, err := rs.NodeHeapBytes()
			got := rs.Memory()
			err = errors.Join(err, rs.Close())
			if err != nil {
				return err
			}
			if got != c.want || heap != c.want.Node {
				return fmt.Errorf("New made %v with a node heap of %d bytes; MemoryOf said %v", got, heap, c.want)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// The example the README quotes: M = 8192, N = 16384, bf16, 8 GPUs of 132
// SMs, the direct path (Auto: the pull engine's symmetric input, 256 MiB,
// its one-shot slots, 2 × 8 × 256 KiB, and, its blocks being 32 MiB, the
// ring's FIFOs for large calls, 64 × 7 × 2 × 128 KiB), the ring (default
// shape, and under 64 MiB) and Auto under 64 MiB (the pull engine in
// rounds). The
// bytes past the buffers are the GEMM signals and the engine's own signal
// pads (a context lays out only its engine's).
func TestMemoryExample(t *testing.T) {
	cfg := rs2d.Config{MaxM: 8192, N: 16384, DType: dtype.BF16}
	const MiB = 1 << 20
	for _, c := range []struct {
		shape       bootstrap.Shape
		engine      rs2d.Engine
		bound       int64
		node, rail  int64
		railRows    int
		chunk       int64
		description string
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 8}, rs2d.EngineAuto, 0, 372*MiB + 11520, 0, 1024, 128 << 10, "1×8 direct"},
		{bootstrap.Shape{Nodes: 1, LocalSize: 8}, rs2d.EngineRing, 0, 112*MiB + 5120, 0, 1024, 128 << 10, "1×8 ring"},
		{bootstrap.Shape{Nodes: 1, LocalSize: 8}, rs2d.EngineRing, 64 * MiB, 64*7*2*74752 + 5120, 0, 1024, 74752, "1×8 ring under 64 MiB"},
		{bootstrap.Shape{Nodes: 2, LocalSize: 4}, rs2d.EngineAuto, 0, 260*MiB + 2816, 192*MiB + 512, 1024, 0, "2×4 direct over IPC"},
		{bootstrap.Shape{Nodes: 2, LocalSize: 4}, rs2d.EngineRing, 64 * MiB, 64*3*2*87296 + 3072, 3*2*170*32<<10 + 512, 170, 87296, "2×4 ring under 64 MiB over IPC"},
		// Auto may pick NVSHMEM, whose puts across hosts are staged in a
		// fourth set: the plan leaves room for it.
		{bootstrap.Shape{Nodes: 2, LocalSize: 4}, rs2d.EngineAuto, 0, 260*MiB + 2816, 256*MiB + 256, 1024, 0, "2×4 direct, any transport"},
		{bootstrap.Shape{Nodes: 2, LocalSize: 4}, rs2d.EngineRing, 64 * MiB, 64*3*2*87296 + 3072, 4*2*128*32<<10 + 256, 128, 87296, "2×4 ring under 64 MiB, any transport"},
	} {
		cfg := cfg
		cfg.Engine, cfg.MaxSymmetricBytes = c.engine, c.bound
		if strings.HasSuffix(c.description, "over IPC") {
			cfg.Transport = internode.IPC
		}
		m, err := rs2d.MemoryOf(cfg, c.shape, 132)
		require.NoError(t, err, c.description)
		t.Logf("%s: %v (%d bytes: node %d, rail %d)", c.description, m, m.Total(), m.Node, m.Rail)
		require.Equal(t, c.node, m.Node, c.description)
		require.Equal(t, c.rail, m.Rail, c.description)
		require.Equal(t, c.railRows, m.RailRows, c.description)
		require.Equal(t, c.chunk, m.Ring.ChunkBytes, c.description)
		if c.bound > 0 {
			require.LessOrEqual(t, m.Total(), c.bound, c.description)
		}
	}
	// Auto under 64 MiB: the pull engine in rounds. Rows are 32 KiB; a
	// round of r rows takes a staging set of r rows for each destination
	// on another GPU of the node per set, three sets on one node (1×8: 3 ×
	// 7 × 32 KiB = 672 KiB a row: 97 rows and the pads in 64 MiB) and two
	// on 2 nodes, sets of 2 × 3 blocks
	// and the rail's 4 × 2 blocks of r rows (Auto's transport may be
	// NVSHMEM, which stages in a fourth set: 20 × 32 KiB = 640 KiB a row:
	// 102).
	for _, c := range []struct {
		shape bootstrap.Shape
		rows  int
	}{{bootstrap.Shape{Nodes: 1, LocalSize: 8}, 97}, {bootstrap.Shape{Nodes: 2, LocalSize: 4}, 102}} {
		bounded := cfg
		bounded.MaxSymmetricBytes = 64 * MiB
		m, err := rs2d.MemoryOf(bounded, c.shape, 132)
		require.NoError(t, err)
		t.Logf("%v auto under 64 MiB: %v", c.shape, m)
		require.Equal(t, rs2d.EnginePull, m.Engine)
		require.Equal(t, c.rows, m.PullRows)
		require.Equal(t, c.rows, m.RailRows)
		require.LessOrEqual(t, m.Total(), bounded.MaxSymmetricBytes)
	}
}

// A rank that joins but never calls, on 2 nodes with rail rounds: every
// other rank's stream fails with a timeout within the bound, and its node
// peer's names it (the others wait on that peer, across the rail).
func TestRingMissingRankOnTwoNodes(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	const bound = 500 * time.Millisecond
	w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: bound}})
	require.NoError(t, err)
	defer w.Close()
	ctx := testContext(t)
	const rowsPer, n = 5, 100
	dt := dtype.F32
	m := rowsPer * shape.World()
	knobs := ringKnobs(dt, 1)
	cfg := rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineRing, Timeout: 10 * time.Second,
		MaxSymmetricBytes: railBound(t, shape, dt, m, n, knobs), Tuning: knobs}
	errs := make([]error, shape.World())
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
		if err != nil {
			return err
		}
		defer rs.Close()
		if r.Comm.Rank() == 3 {
			return nil // never calls
		}
		in, out, free := rankBuffers(t, r.Dev, m, n, shape.World(), dt)
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
		if took := time.Since(start); took > 10*bound {
			return fmt.Errorf("the timeout took %v", took)
		}
		return nil
	})
	require.NoError(t, err)
	for rank := 0; rank < 3; rank++ {
		require.ErrorIs(t, errs[rank], device.ErrTimeout, "rank %d", rank)
	}
	require.Regexp(t, `rank 3 \(node 1, local rank 1\)`, errs[2].Error(), "rank 3's node peer names it")
}
