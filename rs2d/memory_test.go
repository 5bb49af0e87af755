package rs2d_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode/pull"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// A bound exactly at what the planner says a context takes is a bound New
// keeps: on every world shape, for the direct path and the ring (rounds on
// more than one node), the pull engine (in rounds: the bound at the plan of
// the direct path keeps it whole), over IPC and with Auto (which plans for
// the most any transport takes), runWorld finds New's allocations within
// the bound.
func TestBoundAtThePlanHolds(t *testing.T) {
	shapes := []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 1}, {Nodes: 2, LocalSize: 2}, {Nodes: 4, LocalSize: 1},
		{Nodes: 2, LocalSize: 4}, {Nodes: 3, LocalSize: 3}}
	const rowsPer, n = 5, 100
	dt := dtype.F32
	for _, shape := range shapes {
		for _, engine := range []rs2d.Engine{rs2d.EngineAuto, rs2d.EngineRing, rs2d.EnginePull} {
			for _, transport := range []internode.Kind{internode.Auto, internode.IPC} {
				t.Run(fmt.Sprintf("%v/%v/%v", shape, engine, transport), func(t *testing.T) {
					t.Parallel()
					knobs := ringKnobs(dt, 1)
					cfg := rs2d.Config{MaxM: rowsPer * shape.World(), N: n, DType: dt, Engine: engine, Transport: transport}
					cfg.Tuning = knobs
					mem, err := rs2d.MemoryOf(cfg, shape, 0)
					require.NoError(t, err)
					cfg.MaxSymmetricBytes = mem.Total()
					runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: rowsPer, n: n, calls: 2, cfg: cfg, knobs: knobs})
				})
			}
		}
	}
}

// The copy engine's landing slots: on one node of 2 GPUs by default where a
// block reaches 256 MiB (3 chunks of a quarter block, at most 128 MiB),
// nowhere else unless asked; counted in Node; and dropped, not the direct
// path, by a bound that holds the direct path without them.
func TestMemoryCountsTheCopyEngineSlots(t *testing.T) {
	const n = 4096
	dt := dtype.BF16
	rowsFor := func(perRank int64) int { return int(perRank / (n * 2)) } // MaxM for perRank bytes of input per rank
	one2 := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	for _, c := range []struct {
		name     string
		shape    bootstrap.Shape
		perRank  int64
		tuning   rs2d.Tuning
		want     int64
		wantText bool
	}{
		{"1x2 2GiB", one2, 2 << 30, rs2d.Tuning{}, 3 * (128 << 20), true},
		{"1x2 512MiB", one2, 512 << 20, rs2d.Tuning{}, 3 * (64 << 20), true},
		{"1x2 256MiB: blocks below the least", one2, 256 << 20, rs2d.Tuning{}, 0, false},
		{"1x2 off", one2, 2 << 30, rs2d.Tuning{CopyEnginePullBytes: -1}, 0, false},
		{"1x2 chunk", one2, 2 << 30, rs2d.Tuning{CopyEnginePullChunk: 32 << 20}, 3 * (32 << 20), true},
		{"1x4 default off", bootstrap.Shape{Nodes: 1, LocalSize: 4}, 2 << 30, rs2d.Tuning{}, 0, false},
		{"1x4 asked", bootstrap.Shape{Nodes: 1, LocalSize: 4}, 2 << 30, rs2d.Tuning{CopyEnginePullBytes: 1}, 9 * (128 << 20), true},
		{"2x2 default off", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 2 << 30, rs2d.Tuning{}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := rs2d.Config{MaxM: rowsFor(c.perRank), N: n, DType: dt, Engine: rs2d.EnginePull, Tuning: c.tuning}
			mem, err := rs2d.MemoryOf(cfg, c.shape, 0)
			require.NoError(t, err)
			require.Equal(t, c.want, mem.CopyEngine, "%v", mem)
			require.Equal(t, c.wantText, strings.Contains(mem.String(), "copy-engine landing slots"), "%v", mem)
			if c.want == 0 {
				return
			}
			off := cfg
			off.Tuning.CopyEnginePullBytes = -1
			requireDroppedByBound(t, cfg, off, c.shape, 0, c.want, 4096, "the slots") // and their two handshake pads
		})
	}
}

// The pull engine's ring FIFOs for large calls: on one node of more than 2
// GPUs where a block of MaxM rows reaches the ring's least block, at the
// default shape (a narrower one below blocks of 128 MiB) or the one asked,
// with either signal protocol; nowhere else (2 GPUs, 2 nodes, off); counted
// in Node; and dropped, not the direct path, by a bound that holds the
// direct path without them.
func TestMemoryCountsTheRingFifos(t *testing.T) {
	const n = 4096
	rowsFor := func(perRank int64) int { return int(perRank / (n * 2)) } // bf16: MaxM for perRank bytes of input per rank
	d := pull.DefaultRing
	fifo := func(lws, channels int) int64 { return int64(channels*(lws-1)*d.Shape.Slots) * d.Shape.ChunkBytes }
	// Below blocks of 128 MiB: 64 channels of 2 slots of 128 KiB.
	narrow := func(lws int) int64 { return int64(64*(lws-1)*2) * 128 << 10 }
	one4 := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	for _, c := range []struct {
		name    string
		shape   bootstrap.Shape
		perRank int64
		tuning  rs2d.Tuning
		graphs  bool
		want    int64
	}{
		{"1x4 2GiB", one4, 2 << 30, rs2d.Tuning{}, false, fifo(4, d.Shape.Channels)},
		{"1x8 2GiB", bootstrap.Shape{Nodes: 1, LocalSize: 8}, 2 << 30, rs2d.Tuning{}, false, fifo(8, d.Shape.Channels)},
		{"1x4 blocks of 128 MiB", one4, 512 << 20, rs2d.Tuning{}, false, fifo(4, d.Shape.Channels)},
		{"1x4 blocks below 128 MiB", one4, 512<<20 - 1<<20, rs2d.Tuning{}, false, narrow(4)},
		{"1x3 at the least block", bootstrap.Shape{Nodes: 1, LocalSize: 3}, 3 * d.MinBlock, rs2d.Tuning{}, false, narrow(3)},
		{"1x4 blocks below the least", one4, 4*d.MinBlock - 1<<20, rs2d.Tuning{}, false, 0},
		{"1x4 16 channels", one4, 2 << 30, rs2d.Tuning{RingChannels: 16}, false, fifo(4, 16)},
		{"1x4 off", one4, 2 << 30, rs2d.Tuning{RingFromBytes: -1}, false, 0},
		{"1x4 graphs", one4, 2 << 30, rs2d.Tuning{}, true, fifo(4, d.Shape.Channels)},
		{"1x2", bootstrap.Shape{Nodes: 1, LocalSize: 2}, 2 << 30, rs2d.Tuning{}, false, 0},
		{"2x2", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 2 << 30, rs2d.Tuning{}, false, 0},
		{"2x4", bootstrap.Shape{Nodes: 2, LocalSize: 4}, 2 << 30, rs2d.Tuning{}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := rs2d.Config{MaxM: rowsFor(c.perRank), N: n, DType: dtype.BF16,
				Engine: rs2d.EnginePull, Tuning: c.tuning, Graphs: c.graphs}
			mem, err := rs2d.MemoryOf(cfg, c.shape, 132)
			require.NoError(t, err)
			require.Equal(t, c.want, mem.RingFifo, "%v", mem)
			require.Equal(t, c.want > 0, strings.Contains(mem.String(), "ring FIFOs"), "%v", mem)
			if c.want == 0 {
				return
			}
			off := cfg
			off.Tuning.RingFromBytes = -1
			// and their credit words, ready words, call state and peer table
			requireDroppedByBound(t, cfg, off, c.shape, 132, c.want, 16384, "the FIFOs")
		})
	}
}

// requireDroppedByBound checks an optional part of the direct path's
// memory, what cfg holds and off (cfg without it) does not: it is part of
// the node stage (want bytes and less than pads more), and a bound that
// holds the direct path without it drops it, not the direct path.
func requireDroppedByBound(t *testing.T, cfg, off rs2d.Config, shape bootstrap.Shape, sms int, want, pads int64, what string) {
	t.Helper()
	mem, err := rs2d.MemoryOf(cfg, shape, sms)
	require.NoError(t, err)
	without, err := rs2d.MemoryOf(off, shape, sms)
	require.NoError(t, err)
	extra := mem.Node - without.Node
	require.True(t, extra >= want && extra < want+pads, "%s are part of the node stage: %d more bytes, want %d and the pads", what, extra, want)
	bounded := cfg
	bounded.MaxSymmetricBytes = without.Total()
	got, err := rs2d.MemoryOf(bounded, shape, sms)
	require.NoError(t, err)
	require.Equal(t, without, got, "a bound that holds the direct path without %s", what)
}
