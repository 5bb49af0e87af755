package benchmarks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/world"
)

// TestGemmBenchOnSim runs the GEMM + reduce-scatter benchmark job end to end
// on simulated worlds: every path runs, the overlapped output passes its

// The benchmark with fp8 operands and each scaling, on a simulated 1×2
// world: every path runs and the overlapped output passes its check
// against the fp64 sum of the scaled products (K per rank over two
// 128-deep blocks, N over two 128-column ones, M off the 128-row tile).
func TestGemmBenchFP8ScalingsOnSim(t *testing.T) {
	for _, scaling := range []gemm.Scaling{gemm.PerTensor, gemm.RowWise, gemm.BlockWise} {
		t.Run(scaling.String(), func(t *testing.T) {
			w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 2}, world.SimOptions{Device: sim.Options{WaitTimeout: 10 * time.Second}})
			require.NoError(t, err)
			var out, status bytes.Buffer
			var rows []benchmarks.GemmRow
			opts := benchmarks.GemmOptions{
				Shapes: []benchmarks.GemmShape{{M: 132, N: 136, K: 288}}, DType: dtype.BF16, Iters: 1, Reps: 1,
				Config:  gemmrs.Config{Input: dtype.E4M3, Mode: gemmrs.Overlap, Timeout: 20 * time.Second},
				Scaling: scaling, Out: benchmarks.Printer{W: &out}, Status: &status, Title: "test world", Rows: &rows,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				return benchmarks.GemmBench(opts)(ctx, r)
			}))
			require.NoError(t, w.Close())
			require.Len(t, rows, 1)
			require.Equal(t, gemmrs.GemmOwn, rows[0].Choice, rows[0].Why)
			require.Greater(t, rows[0].BoundUse, 0.0)
			require.LessOrEqual(t, rows[0].BoundUse, 1.0)
			text := out.String()
			require.Contains(t, text, "ok ")
			if scaling != gemm.PerTensor {
				require.Contains(t, text, scaling.String()+"-wise scales")
			}
		})
	}
}

// checks, the table and CSV come out, and nothing is left behind.
func TestGemmBenchOnSim(t *testing.T) {
	for _, shape := range []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 2}} {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
			t.Run(shape.String()+"/"+dt.String(), func(t *testing.T) {
				before := sim.Live()
				w, err := world.Sim(shape, simOptions)
				require.NoError(t, err)
				ws := shape.World()
				var out, status bytes.Buffer
				var rows []benchmarks.GemmRow
				opts := benchmarks.GemmOptions{
					Shapes: []benchmarks.GemmShape{{M: 16 * ws, N: 24, K: 8 * ws}, {M: 4 * ws, N: 7, K: 3 * ws}},
					DType:  dt, Iters: 2, Reps: 3,
					Config: gemmrs.Config{Mode: gemmrs.Overlap, Timeout: 5 * time.Minute},
					Out:    benchmarks.Printer{W: &out}, Status: &status, Title: "test world", Rows: &rows,
				}
				ctx := t.Context()
				require.NoError(t, w.Run(ctx, func(ctx context.Context, r world.Rank) error {
					return benchmarks.GemmBench(opts)(ctx, r)
				}))
				require.NoError(t, w.Close())
				require.Equal(t, before, sim.Live(), "simulated resources left behind")

				require.Len(t, rows, 2)
				// Auto on the CPU: the own GEMM's twin where it can compute
				// the product (N and K multiples of 8), the matmul elsewhere.
				require.Equal(t, gemmrs.GemmOwn, rows[0].Choice, rows[0].Why)
				require.Equal(t, gemmrs.GemmCuBLAS, rows[1].Choice, rows[1].Why)
				for _, row := range rows {
					require.Equal(t, gemmrs.Overlap, row.Picks)
					require.Positive(t, row.Gemm)
					require.Positive(t, row.RS)
					require.Positive(t, row.RSAuto)
					require.InDelta(t, row.Overlap.Seconds()/max(row.Gemm, min(row.RS, row.RSAuto)).Seconds(), row.OverBound(), 1e-12)
					// Each round's ratio lies between those of the
					// spreads' ends (it pairs one measurement of each).
					require.Len(t, row.OverBoundRounds, opts.Reps)
					lo := row.OverlapSpread.Min.Seconds() / max(row.GemmSpread.Max, min(row.RSSpread.Max, row.RSAutoSpread.Max)).Seconds()
					hi := row.OverlapSpread.Max.Seconds() / max(row.GemmSpread.Min, min(row.RSSpread.Min, row.RSAutoSpread.Min)).Seconds()
					for _, r := range row.OverBoundRounds {
						require.True(t, lo <= r && r <= hi, "round ratio %g outside [%g, %g]", r, lo, hi)
					}
					require.Positive(t, row.Sequential)
					require.Positive(t, row.Overlap)
					require.Positive(t, row.GemmInOverlap)
					require.Zero(t, row.GemmNCCL, "no NCCL on the CPU backend")
					require.False(t, row.NCCLChecked)
					require.Greater(t, row.BoundUse, 0.0)
					require.LessOrEqual(t, row.BoundUse, 1.0)
					for _, x := range []struct {
						med    time.Duration
						spread benchmarks.Spread
					}{{row.Gemm, row.GemmSpread}, {row.RS, row.RSSpread}, {row.RSAuto, row.RSAutoSpread}, {row.Sequential, row.SequentialSpread}, {row.Overlap, row.OverlapSpread}} {
						require.True(t, x.spread.Min <= x.med && x.med <= x.spread.Max, "median %v outside its spread %v", x.med, x.spread)
					}
					// The traced call: every block's end (the own GEMM's
					// one launch: its end), and a copy to each node peer of
					// the last node step.
					if row.Choice == gemmrs.GemmOwn {
						require.Len(t, row.BlockEnds, 1)
					} else {
						require.Len(t, row.BlockEnds, ws)
					}
					require.Len(t, row.Stages.Peers, shape.LocalSize-1)
					require.Positive(t, row.Stages.Total)
					// Every rank's own trace: its copies went to the other
					// local ranks, and the row's figures are the slowest
					// rank's, field by field.
					require.Len(t, row.RankTraces, ws)
					var total, landed time.Duration
					for k, rt := range row.RankTraces {
						require.Len(t, rt.BlockEnds, len(row.BlockEnds))
						require.Len(t, rt.Stages.Peers, shape.LocalSize-1)
						seen := map[int]bool{k % shape.LocalSize: true}
						for _, p := range rt.Stages.Peers {
							require.False(t, seen[p.LocalRank], "rank %d: a copy to local rank %d twice or to itself", k, p.LocalRank)
							seen[p.LocalRank] = true
							require.Positive(t, p.Landed)
						}
						require.Positive(t, rt.Stages.Total)
						total = max(total, rt.Stages.Total)
						landed = max(landed, rt.Stages.Peers[0].Landed)
					}
					require.Equal(t, total, row.Stages.Total)
					require.Equal(t, landed, row.Stages.Peers[0].Landed)
				}
				text := out.String()
				require.Contains(t, text, "NCCL: not run")
				require.Contains(t, text, "ok ")
				require.Equal(t, 2, strings.Count(text, "% of bound"), text)
				require.Equal(t, 1, strings.Count(text, "traced call (us): own GEMM (1 signals per destination) ends"), text)
				require.Equal(t, 1, strings.Count(text, "traced call (us): GEMM blocks end"), text)
				for k := 0; k < ws; k++ {
					require.Equal(t, 2, strings.Count(text, fmt.Sprintf("rank %d (us): GEMM ends", k)), text)
				}

				var csv bytes.Buffer
				require.NoError(t, benchmarks.WriteGemmCSV(&csv, rows, ws, dt))
				lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
				require.Len(t, lines, 3)
				require.True(t, strings.HasPrefix(lines[1], "32,24,16,8,2,") || strings.HasPrefix(lines[1], "64,24,32,8,4,"), lines[1])
			})
		}
	}
}

func TestGemmBenchRejectsIndivisibleK(t *testing.T) {
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 2}, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	opts := benchmarks.GemmOptions{Shapes: []benchmarks.GemmShape{{M: 4, N: 4, K: 3}}, DType: dtype.BF16}
	err = w.Run(context.Background(), func(ctx context.Context, r world.Rank) error { return benchmarks.GemmBench(opts)(ctx, r) })
	require.ErrorContains(t, err, "K=3 must be divisible")
}

func TestParseGemmShapes(t *testing.T) {
	got, err := benchmarks.ParseGemmShapes("8192x8192x28672, 4096X8192x8192")
	require.NoError(t, err)
	require.Equal(t, []benchmarks.GemmShape{{8192, 8192, 28672}, {4096, 8192, 8192}}, got)
	require.Equal(t, "8192x8192x28672", got[0].String())
	for _, bad := range []string{"8192x8192", "0x1x1", "ax1x1", ""} {
		_, err := benchmarks.ParseGemmShapes(bad)
		require.Error(t, err, bad)
	}
	require.Len(t, benchmarks.DefaultGemmShapes(true, 4, dtype.Invalid), 3)
	for _, s := range benchmarks.DefaultGemmShapes(false, 8, dtype.Invalid) {
		require.Zero(t, s.M%8)
		require.Zero(t, s.K%8)
	}
	// e4m3's rows (K/world bytes per rank) are 16-byte multiples, one with
	// a k tail past the 128-deep scale blocks.
	tail := false
	for _, s := range benchmarks.DefaultGemmShapes(false, 8, dtype.E4M3) {
		require.Zero(t, s.M%8)
		require.Zero(t, s.K%8)
		require.Zero(t, s.K/8%16, s)
		tail = tail || s.K/8%128 != 0 && s.K/8 > 128
	}
	require.True(t, tail)
}

// The one-GPU GEMM benchmark runs end to end on the CPU backend: every path
// of every shape and layout timed each round (the own GEMM with and without
// its stream-K workspace, here with the twin), both checked, nothing left
// behind.
func TestMMBenchOnSim(t *testing.T) {
	before := sim.Live()
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 1}, simOptions)
	require.NoError(t, err)
	var out, status bytes.Buffer
	var rows []benchmarks.MMRow
	opts := benchmarks.MMOptions{
		Shapes: []benchmarks.MMShape{{M: 130, N: 264, K: 72}}, DType: dtype.BF16,
		Layouts: []gemm.BLayout{gemm.BKN, gemm.BNK}, Rounds: 3, Iters: 2, Segments: 2,
		Out: benchmarks.Printer{W: &out}, Status: benchmarks.Printer{W: &status}, Rows: &rows,
	}
	ctx := t.Context()
	require.NoError(t, w.Run(ctx, func(ctx context.Context, r world.Rank) error { return benchmarks.MM(opts)(ctx, r) }))
	require.NoError(t, w.Close())
	require.Equal(t, before, sim.Live(), "simulated resources left behind")
	require.Len(t, rows, 2)
	for _, row := range rows {
		for _, ds := range [][]time.Duration{row.Own, row.Signalled, row.Whole, row.Matmul} {
			require.Len(t, ds, 3)
			for _, d := range ds {
				require.Positive(t, d)
			}
		}
		require.Greater(t, row.BoundUse, 0.0)
		require.LessOrEqual(t, row.BoundUse, 1.0)
	}
	require.Equal(t, 2, strings.Count(out.String(), " ok: "), out.String())
}

func TestWriteGemmJSONCarriesTheRounds(t *testing.T) {
	rows := []benchmarks.GemmRow{
		{Shape: benchmarks.GemmShape{M: 64, N: 32, K: 128}, KLocal: 64, Gemm: 100 * time.Microsecond, RS: 40 * time.Microsecond,
			RSAuto: 30 * time.Microsecond, Overlap: 110 * time.Microsecond, OverBoundRounds: []float64{1.05, 1.1, 1.2}},
		{Shape: benchmarks.GemmShape{M: 8, N: 8, K: 8}, Skipped: "not here"},
	}
	var out bytes.Buffer
	require.NoError(t, benchmarks.WriteGemmJSON(&out, rows, 2, dtype.BF16))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var got struct {
		OverBound       float64   `json:"overlap_over_bound"`
		OverBoundRounds []float64 `json:"overlap_over_bound_rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.InDelta(t, 1.1, got.OverBound, 1e-12)
	require.Equal(t, []float64{1.05, 1.1, 1.2}, got.OverBoundRounds)
	require.NotContains(t, lines[1], "overlap_over_bound")
}
