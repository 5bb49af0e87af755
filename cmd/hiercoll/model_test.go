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

func TestModelCommandRunsWellUnderASecond(t *testing.T) {
	start := time.Now()
	require.NoError(t, runModelTo(context.Background(), nil, &bytes.Buffer{}))
	require.Less(t, time.Since(start), time.Second)
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
	require.ErrorContains(t, err, "node push bandwidth to all peers")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
