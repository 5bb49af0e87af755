package floors_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/benchmarks/floors"
	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/world"
)

// TestFloorsOnSim runs every floors measurement, those beside a GEMM
// included, on a simulated 1×4 world: each prints a line with a positive
// time, and nothing is left behind.
func TestFloorsOnSim(t *testing.T) {
	before := sim.Live()
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
	require.NoError(t, err)
	var out bytes.Buffer
	opts := floors.Options{Bytes: 16 << 10, Iters: 1, BesideGemm: true, Out: benchmarks.Printer{W: &out}, Title: "test world"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, w.Run(ctx, floors.Job(opts)))
	require.NoError(t, w.Close())
	require.Equal(t, before, sim.Live(), "simulated resources left behind")

	text := out.String()
	for _, want := range []string{
		"CE peer copy, every rank to rank+1 (ring)",
		"GEMM alone, 4 blocks of 1x8192x2048 bf16",
		"CE copies to rank+1..+3 in turn, a stream per peer, chained by events, device barrier first",
		"each copy after its block's GEMM (events), device barrier first",
		"signal round trip",
	} {
		require.Contains(t, text, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		require.NotContains(t, line, " 0.0 us", line)
		require.NotContains(t, line, "NaN", line)
	}
}

// Beside a GEMM, every rank's block of C lies in the source buffer: with
// more than 4 ranks the GEMMs wrote past it (the simulator reports such a
// write as a failed stream).
func TestFloorsBesideGemmOnFiveRanks(t *testing.T) {
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 5}, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	var out bytes.Buffer
	opts := floors.Options{Bytes: 16 << 10, Iters: 1, BesideGemm: true, Out: benchmarks.Printer{W: &out}, Title: "five ranks"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, w.Run(ctx, floors.Job(opts)))
	require.Contains(t, out.String(), "GEMM alone, 5 blocks")
}
