package floors_test

import (
	"bytes"
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

// simOptions: the simulated GPUs' waits are bounded far above what a
// loaded machine needs, so that only a real hang fails a test.
var simOptions = world.SimOptions{Device: sim.Options{WaitTimeout: 5 * time.Minute}}

// smallGemm is a GEMM beside the copies small enough for the CPU (the
// measurements are the same as with the default 8192×2048 one): 2 rows of
// N=64 per block, K=32.
func smallGemm(o floors.Options) floors.Options {
	o.BesideGemm, o.GemmN, o.GemmK, o.Bytes = true, 64, 32, 2*2*64
	return o
}

// TestFloorsOnSim runs every floors measurement, those beside a GEMM
// included, on a simulated 1×4 world: each prints a line with a positive
// time, and nothing is left behind.
func TestFloorsOnSim(t *testing.T) {
	before := sim.Live()
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w, err := world.Sim(shape, simOptions)
	require.NoError(t, err)
	var out bytes.Buffer
	opts := smallGemm(floors.Options{Iters: 1, Out: benchmarks.Printer{W: &out}, Title: "test world"})
	require.NoError(t, w.Run(t.Context(), floors.Job(opts)))
	require.NoError(t, w.Close())
	require.Equal(t, before, sim.Live(), "simulated resources left behind")

	text := out.String()
	for _, want := range []string{
		"CE peer copy, every rank to rank+1 (ring)",
		"SM reads 67% (32 SMs), CE reads the rest, from all 3 peers",
		"CE reads in chunks, 3 stream(s), each chunk summed once landed (32 SMs)",
		"GEMM alone, 4 blocks of 2x64x32 bf16",
		"own GEMM, a launch per block, storing each peer's block straight into that peer's heap, device barrier first",
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
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 5}, simOptions)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	var out bytes.Buffer
	opts := smallGemm(floors.Options{Iters: 1, Out: benchmarks.Printer{W: &out}, Title: "five ranks"})
	require.NoError(t, w.Run(t.Context(), floors.Job(opts)))
	require.Contains(t, out.String(), "GEMM alone, 5 blocks of 2x64x32 bf16")
}
