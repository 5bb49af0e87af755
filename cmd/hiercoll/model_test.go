package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestModelCommandWritesTableCSVAndPNG(t *testing.T) {
	dir := t.TempDir()
	csvPath, pngPath, ratioPath := filepath.Join(dir, "m.csv"), filepath.Join(dir, "m.png"), filepath.Join(dir, "r.png")
	var out bytes.Buffer
	err := runModelTo(context.Background(), []string{
		"--nodes", "1,2", "--gpus", "4", "--sizes", "1M,64M",
		"--csv", csvPath, "--png", pngPath, "--ratio-png", ratioPath,
	}, &out)
	require.NoError(t, err)
	text := out.String()
	require.Contains(t, text, "NCCL/2D")
	require.Contains(t, text, "4 GPU(s) per node")

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 1+2*2)
	require.Equal(t, "nodes", recs[0][0])
	require.Equal(t, []string{"1", "4", "1048576"}, recs[1][:3])
	require.Equal(t, []string{"2", "4", "67108864"}, recs[4][:3])

	for _, path := range []string{pngPath, ratioPath} {
		g, err := os.Open(path)
		require.NoError(t, err)
		img, err := png.Decode(g)
		require.NoError(t, g.Close())
		require.NoError(t, err)
		require.Equal(t, 1000, img.Bounds().Dx())
	}
}

func TestModelCommandTakesFloorsAndFlags(t *testing.T) {
	var out bytes.Buffer
	floors := filepath.Join("..", "..", "benchmarks", "results", "2026-11-21-h200x4-f", "run08-sm-push-floors.log")
	err := runModelTo(context.Background(), []string{
		"--nodes", "4", "--gpus", "1", "--nics", "1", "--sizes", "16M", "--floors", floors, "--nic-bw", "25", "--node-lat", "5",
	}, &out)
	require.NoError(t, err)
	text := out.String()
	require.Contains(t, text, "floors: local copy 1093.2 GB/s (32 SMs)")
	require.Contains(t, text, "1 NIC(s) per node × 25.0 GB/s")
	require.Contains(t, text, "node step: 5.00 µs")
	// One GPU per node: NCCL would run PAT, which the table shows.
	line := lastLine(text)
	require.NotContains(t, line, " - ", "PAT columns filled: %q", line)
}

func TestModelCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"},
		{"--nodes", "x"},
		{"--sizes", "12Q"},
		{"--gpus", "0"},
		{"--png-dir", "x"},
		{"extra"},
	} {
		err := runModelTo(context.Background(), args, &bytes.Buffer{})
		var ue usageError
		require.ErrorAs(t, err, &ue, "args %q", args)
	}
}

// The model's default table takes milliseconds; the bound, far above
// that, catches only a model gone pathologically slow, even on a loaded
// machine.
func TestModelCommandIsQuick(t *testing.T) {
	start := time.Now()
	var out bytes.Buffer
	require.NoError(t, runModelTo(context.Background(), nil, &out))
	require.Contains(t, out.String(), "128")
	require.Less(t, time.Since(start), 30*time.Second)
}

// --validate alone checks the model against the runs built into the
// command, the same as against the folder they come from.
func TestModelValidateDefaultsToTheShippedRuns(t *testing.T) {
	var shipped, folder bytes.Buffer
	require.NoError(t, runModelTo(context.Background(), []string{"--validate"}, &shipped))
	require.NoError(t, runModelTo(context.Background(), []string{"--validate=" + filepath.Join("..", "..", "benchmarks", "results")}, &folder))
	require.Contains(t, shipped.String(), "NVIDIA/nccl issue 1229")
	_, shippedBody, _ := strings.Cut(shipped.String(), "\n")
	_, folderBody, _ := strings.Cut(folder.String(), "\n")
	require.Equal(t, folderBody, shippedBody)
	code, _, errOut := hiercoll(t, "model", "--validate", "a", "b")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "b"`)
}

// The help shows each default as a person would write it.
func TestModelHelpDefaults(t *testing.T) {
	code, out, _ := hiercoll(t, "model", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, out, "(default 10.15)")
	require.NotRegexp(t, `\d\.\d{7,}`, out)
}

// Bandwidths must be positive numbers, latencies not negative: NaN, a
// negative or a zero rate is a usage error naming the flag.
func TestModelRefusesBadTerms(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--nic-bw", "NaN"}}, {[]string{"--push-bw", "-3"}}, {[]string{"--local-bw", "0"}},
		{[]string{"--reduce-bw", "+Inf"}}, {[]string{"--node-lat", "-1"}}, {[]string{"--ring-nics", "-2"}},
	} {
		code, out, errOut := hiercoll(t, append([]string{"model"}, tc.args...)...)
		require.Equal(t, 2, code, "%q", tc.args)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.args[0]+" ", "%q", tc.args)
	}
	code, _, errOut := hiercoll(t, "model", "--lane-bw", "0", "--node-lat", "0", "--nodes", "2", "--sizes", "1M")
	require.Equal(t, 0, code, "no cap per lane, no fixed latency: %s", errOut)
}

func TestModelCommandValidates(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := runModelTo(context.Background(), []string{"--validate", filepath.Join("..", "..", "benchmarks", "results"), "--png-dir", dir}, &out)
	require.NoError(t, err)
	text := out.String()
	require.Contains(t, text, "calibration: sets one lane's rate")
	require.Contains(t, text, "calibration: sets the default node step latency")
	require.Contains(t, text, "NVIDIA/nccl issue 1229")
	for _, name := range []string{"anchor.png", "one-node.png", "emulated-nvlink.png", "emulated-sockets.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = png.Decode(f)
		require.NoError(t, f.Close())
		require.NoError(t, err, name)
	}
}

func TestModelCommandValidateRejectsBadTerms(t *testing.T) {
	err := runModelTo(context.Background(), []string{"--validate", filepath.Join("..", "..", "benchmarks", "results"), "--push-all-bw", "0"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "--push-all-bw 0: want a bandwidth above 0 GB/s")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
