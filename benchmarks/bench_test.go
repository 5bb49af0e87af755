package benchmarks_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/world"
)

// simOptions: the simulated GPUs' waits are bounded far above what a
// loaded machine needs, so that only a real hang fails a test (the test's
// context ends with go test's -timeout).
var simOptions = world.SimOptions{Device: sim.Options{WaitTimeout: 5 * time.Minute}}

func runBench(t *testing.T, opts benchmarks.BenchOptions) error {
	t.Helper()
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 2}, simOptions)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	ctx := t.Context()
	return w.Run(ctx, benchmarks.Bench(opts))
}

// The table's rows follow each other with nothing between them (a progress
// line on another stream used to come between a row and the next), each
// time is the median of the measurements within their spread, and a CSV of
// a run without NCCL leaves NCCL's columns empty.
func TestBenchTableAndCSV(t *testing.T) {
	var out bytes.Buffer
	var rows []benchmarks.BenchRow
	opts := benchmarks.BenchOptions{
		Sizes: []int64{512, 8000}, N: 64, DType: dtype.F32, Iters: 2, Reps: 3,
		Out: benchmarks.Printer{W: &out}, Title: "test", Rows: &rows,
	}
	require.NoError(t, runBench(t, opts))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	require.Contains(t, lines[len(lines)-3], "size(B)", "the header, then one line per size:\n%s", out.String())
	require.Regexp(t, `^\s+512\s+128\s+fp32\s+[0-9.]+ .* -\s+-\s+-\s+-\s+-\s+\[[0-9.]+\.\.[0-9.]+\]$`, lines[len(lines)-2])
	require.Regexp(t, `^\s+7680\s+1920\s+fp32\s+`, lines[len(lines)-1], "rounded down to whole rows per rank")

	require.Len(t, rows, 2)
	for _, r := range rows {
		require.True(t, r.TimeMin <= r.Time && r.Time <= r.TimeMax && r.TimeMin > 0, "%+v", r)
		require.Zero(t, r.NCCLTime+r.NCCLMin+r.NCCLMax)
	}
	var csv bytes.Buffer
	require.NoError(t, benchmarks.WriteCSV(&csv, rows, 2, dtype.F32))
	csvLines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	require.Len(t, csvLines, 3)
	header := strings.Split(csvLines[0], ",")
	for _, l := range csvLines[1:] {
		f := strings.Split(l, ",")
		require.Len(t, f, len(header))
		for i, name := range header {
			if strings.HasPrefix(name, "nccl_") || name == "max_abs_diff_vs_nccl" {
				require.Empty(t, f[i], "NCCL's column %s empty: %q", name, l)
			} else {
				require.NotEmpty(t, f[i], "column %s: %q", name, l)
			}
		}
	}
	rows[0].NCCLTime, rows[0].NCCLMin, rows[0].NCCLMax, rows[0].Checked, rows[0].MaxErr = time.Millisecond, 900*time.Microsecond, 1100*time.Microsecond, true, 0.5
	csv.Reset()
	require.NoError(t, benchmarks.WriteCSV(&csv, rows[:1], 2, dtype.F32))
	require.Regexp(t, `,1000\.00,[0-9.]+,0\.5,[0-9.]+,[0-9.]+,900\.00,1100\.00,true\n$`, csv.String(), "the last column: simulated")
}

// Options that make no sense are refused before anything runs (--n -3
// panicked in makeslice; a size below one row per rank was silently
// measured as one row).
func TestBenchRefusesBadOptions(t *testing.T) {
	good := benchmarks.BenchOptions{Sizes: []int64{1 << 16}, N: 64, DType: dtype.BF16}
	for name, mod := range map[string]func(o *benchmarks.BenchOptions){
		"negative N":      func(o *benchmarks.BenchOptions) { o.N = -3 },
		"zero N":          func(o *benchmarks.BenchOptions) { o.N = 0 },
		"no sizes":        func(o *benchmarks.BenchOptions) { o.Sizes = nil },
		"below one row":   func(o *benchmarks.BenchOptions) { o.Sizes = []int64{100, 1 << 16} },
		"negative size":   func(o *benchmarks.BenchOptions) { o.Sizes = []int64{-1 << 20} },
		"negative iters":  func(o *benchmarks.BenchOptions) { o.Iters = -1 },
		"no dtype":        func(o *benchmarks.BenchOptions) { o.DType = 0 },
		"N that overflow": func(o *benchmarks.BenchOptions) { o.N = 1 << 62 },
		"offset of 16":    func(o *benchmarks.BenchOptions) { o.InputOffset = 16 },
		"negative offset": func(o *benchmarks.BenchOptions) { o.InputOffset = -2 },
		"odd offset":      func(o *benchmarks.BenchOptions) { o.InputOffset = 3 }, // not a whole bf16 element
	} {
		o := good
		mod(&o)
		err := runBench(t, o)
		require.True(t, errors.Is(err, device.ErrInvalidArgument), "%s: %v", name, err)
	}
	o := good
	o.Sizes = []int64{100}
	require.ErrorContains(t, runBench(t, o), "sizes run from 256 bytes (one row per rank")
}
