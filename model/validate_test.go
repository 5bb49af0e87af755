package model

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	shipped "github.com/seed12530e24/hiercoll/benchmarks/results"
)

// The most the model may be off, as model/README.md states, by what ran.
var errorBounds = map[string]float64{
	"2×2 hiercoll, IPC rail over NVLink":              0.15,
	"2×2 hiercoll, NVSHMEM rail over NVLink":          0.15,
	"2×2 hiercoll, NCCL rail, 1 lane(s) over sockets": 0.06,
	"2×2 hiercoll, NCCL rail, 4 lane(s) over sockets": 0.20,
	"2×2 hiercoll, NCCL rail, 8 lane(s) over sockets": 0.22,
	// 16 lanes ran slower than 8; the model's lanes only add up to the
	// socket path's rate.
	"2×2 hiercoll, NCCL rail, 16 lane(s) over sockets": 0.30,
	"2×2 NCCL flat ring, sockets between nodes":        0.08,
	"1×4 hiercoll (node stage)":                        0.10,
	"1×2 hiercoll (node stage)":                        0.25,
	// The ring model sits at NVLink's ring ceiling; NCCL reaches 93% of it
	// on 4 of these GPUs at 2 GiB, and less on 2.
	"1×4 NCCL ring": 0.20,
	"1×2 NCCL ring": 0.40,
}

func TestValidateAgainstTheRecordedRuns(t *testing.T) {
	rep, err := Validate(results, nil)
	require.NoError(t, err)

	seen := map[string]int{}
	for _, s := range Sources {
		seen[s.Path] = 0
	}
	calibrations := 0
	for _, pt := range rep.Points {
		seen[pt.Source]++
		require.Greater(t, pt.Measured, 0.0)
		require.Greater(t, pt.Model, 0.0)
		if pt.Calibration != "" {
			calibrations++
			require.InDelta(t, 0, pt.Error(), 0.005, "%s %s at %d: %s", pt.Source, pt.Config, pt.Bytes, pt.Calibration)
			continue
		}
		bound, ok := errorBounds[pt.Config]
		require.True(t, ok, "no error bound for %q", pt.Config)
		require.LessOrEqual(t, math.Abs(pt.Error()), bound, "%s %s at %d MiB: measured %.1f µs, model %.1f µs",
			pt.Source, pt.Config, pt.Bytes>>20, pt.Measured*1e6, pt.Model*1e6)
	}
	for path, n := range seen {
		require.Positive(t, n, "no points from %s", path)
	}
	// One lane, the socket path, the flat ring, and the two points the
	// default node step latency comes from.
	require.Equal(t, 5, calibrations)
	require.Len(t, rep.Terms, 3)
	// 2×2 has 3 sizes per variant: 7 files, 1 + 1 + 1 + 1 + 1 + 3 + 2 variants.
	// 1×2 and 1×4 have 12 sizes each. Every row gives hiercoll and NCCL.
	require.Len(t, rep.Points, 2*(3*10+2*12))
}

func TestValidateSocketTerms(t *testing.T) {
	rep, err := Validate(results, nil)
	require.NoError(t, err)
	// One NCCL communicator's send/recv over sockets moved ~3.3 GB/s per
	// rank (RESULTS.md); many lanes ~11; the flat ring ~9
	// across the emulated boundary.
	want := []float64{3.35e9, 10.9e9, 9.0e9}
	for i, term := range rep.Terms {
		require.InEpsilon(t, want[i], term.Value, 0.02, term.Name)
		require.True(t, strings.HasPrefix(term.From, "2026-11-21-"), term.From)
	}
}

func TestAnchorWithinTolerance(t *testing.T) {
	rep, err := Validate(results, nil)
	require.NoError(t, err)
	require.Len(t, rep.Anchor, len(NCCLAnchor))
	at := -1
	for i, s := range AnchorSizes {
		if s == 2<<30 {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 0)
	for _, a := range rep.Anchor {
		// At 2 GiB per rank the ring model is within 5% of every published
		// point; at 8 GiB it is above them by up to 19% (model/README.md).
		e := (a.Ring[at] - a.BusBW) / a.BusBW
		require.LessOrEqual(t, math.Abs(e), 0.05, "%d nodes: published %.0f GB/s, model %.0f", a.Nodes, a.BusBW/1e9, a.Ring[at]/1e9)
		for i := range AnchorSizes {
			e := (a.Ring[i] - a.BusBW) / a.BusBW
			require.LessOrEqual(t, math.Abs(e), 0.25, "%d nodes at %d GiB", a.Nodes, AnchorSizes[i]>>30)
		}
	}
}

func TestDefaultNodeLatencyReproducesTheOneMiBRuns(t *testing.T) {
	for _, c := range calNodeLat {
		recs, err := readBenchCSV(os.DirFS(results), c.path)
		require.NoError(t, err)
		gpus := 4
		if strings.Contains(c.path, "1x2") {
			gpus = 2
		}
		for _, r := range recs {
			if r.bytes != c.bytes {
				continue
			}
			got, err := RS2D(Defaults(1, gpus), r.bytes)
			require.NoError(t, err)
			require.InEpsilon(t, r.hiercollUS*1e-6, got.Total, 0.005, c.path)
		}
	}
}

func TestParseBenchCSV(t *testing.T) {
	recs, err := parseBenchCSV(strings.NewReader("variant,bytes_per_rank,count,dtype,M,N,hiercoll_us,hiercoll_busbw_gbps,nccl_us,nccl_busbw_gbps,max_abs_diff_vs_nccl\n" +
		"sm push32 red32 ch0 g1 lanes4,33554432,16777216,bf16,4096,4096,875.63,28.74,2651.49,9.49,0.03125\n"))
	require.NoError(t, err)
	require.Equal(t, []benchRecord{{variant: "sm push32 red32 ch0 g1 lanes4", bytes: 32 << 20, hiercollUS: 875.63, ncclUS: 2651.49}}, recs)
	_, err = parseBenchCSV(strings.NewReader("variant,bytes\nx,1\n"))
	require.ErrorContains(t, err, "bytes_per_rank")
	_, err = parseBenchCSV(strings.NewReader("variant,bytes_per_rank,hiercoll_us,nccl_us\nx,1,abc,2\n"))
	require.ErrorContains(t, err, "line 2")
}

// ValidateFS reads the same runs from the copy built into the programs
// (benchmarks/results.CSV) as Validate reads from the folder.
func TestValidateFromTheEmbeddedResults(t *testing.T) {
	fromDir, err := Validate(results, nil)
	require.NoError(t, err)
	embedded, err := ValidateFS(shipped.CSV, nil)
	require.NoError(t, err)
	require.Equal(t, fromDir, embedded)
}
