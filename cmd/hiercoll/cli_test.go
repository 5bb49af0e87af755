package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hiercoll runs the command line in-process and returns its exit status,
// stdout and stderr.
func hiercoll(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args[0], args[1:], &out, &errOut)
	return code, out.String(), errOut.String()
}

// Mistakes on the command line: exit status 2 and one line naming the flag
// as typed, printed once however many ranks the world has.
func TestCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--backend", "sim", "--m", "13"}, "hiercoll demo: --m 13 is not a multiple of the world size 8"},
		{[]string{"demo", "--backend", "sim", "--nodes", "1", "--gpus", "3", "--m", "4"}, "--m 4 is not a multiple of the world size 3"},
		{[]string{"demo", "--backend", "sim", "--m", "0"}, "hiercoll demo: --m 0: want a positive number"},
		{[]string{"demo", "--backend", "sim", "--n", "0"}, "hiercoll demo: --n 0: want a positive number"},
		{[]string{"demo", "--backend", "sim", "--gpus", "0"}, "hiercoll demo: --gpus 0: want a positive number"},
		{[]string{"demo", "--backend", "sim", "--nodes", "-1"}, "--nodes -1: want a positive number"},
		{[]string{"demo", "--backend", "sim", "--timeout", "0s"}, "--timeout 0s: want a positive number"},
		{[]string{"demo", "--backend", "gpu"}, "--backend gpu: want auto, cuda or sim"},
		{[]string{"demo", "stray"}, `unexpected argument "stray"`},
		{[]string{"demo", "--nope"}, "flag provided but not defined: -nope (hiercoll demo -h lists the flags)"},
		{[]string{"verify", "--backend", "sim", "--calls", "0"}, "hiercoll verify: --calls 0: want a positive number"},
		{[]string{"bench", "--backend", "sim", "--n", "-3"}, "hiercoll bench: --n -3: want a positive number"},
		{[]string{"bench", "--backend", "sim", "--sizes", "1000"}, "hiercoll bench: --sizes 1000: 1000 bytes is less than one row per rank: with --n 4096 (bf16) on 8 ranks the smallest size is 65536 bytes"},
		{[]string{"bench", "--backend", "sim", "--reps", "0"}, "--reps 0: want a positive number"},
		{[]string{"floors", "--backend", "sim", "--bytes", "-5"}, "--bytes -5: want a positive number"},
		{[]string{"bench-gemm", "--backend", "sim", "--shapes", "13x8x8"}, "--shapes 13x8x8: 13x8x8: M and K must be multiples of the world size 8"},
		{[]string{"bench-gemm", "--backend", "sim", "--scaling", "row"}, "--scaling row: scales are for --input e4m3"},
		{[]string{"bench-gemm", "--backend", "sim", "--input", "e4m3", "--scaling", "column"}, `unknown scaling "column" (want tensor, row or block)`},
		{[]string{"launch", "--nproc", "0", "--", "true"}, "--nproc 0: want a positive number"},
		{[]string{"nosuch"}, `unknown command "nosuch"`},
	} {
		code, out, errOut := hiercoll(t, tc.args...)
		require.Equal(t, 2, code, "%q: %s", tc.args, errOut)
		require.Empty(t, out, "%q", tc.args)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		if tc.args[0] != "nosuch" {
			require.Equal(t, 1, strings.Count(errOut, "\n"), "%q: one line:\n%s", tc.args, errOut)
		}
	}
}

// -h and help print the command's usage on stdout and exit 0; --version.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"demo", "-h"}, {"demo", "--help"}, {"help", "demo"}} {
		code, out, errOut := hiercoll(t, args...)
		require.Equal(t, 0, code, "%q", args)
		require.Empty(t, errOut)
		require.True(t, strings.HasPrefix(out, "usage: hiercoll demo [flags]\n"), "%q:\n%s", args, out)
		require.Contains(t, out, "-calls int")
	}
	code, out, _ := hiercoll(t, "help", "launch")
	require.Equal(t, 0, code)
	require.Contains(t, out, "usage: hiercoll launch --nproc N [--nodes K] -- command args...")
	for _, args := range [][]string{{"help"}, {"--help"}} {
		code, out, _ := hiercoll(t, args...)
		require.Equal(t, 0, code)
		require.Contains(t, out, "commands:")
	}
	code, out, _ = hiercoll(t, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^hiercoll 0\.1\.0 \(go`, out)
	py, err := os.ReadFile(filepath.Join("..", "..", "python", "hiercoll", "__init__.py"))
	require.NoError(t, err)
	require.Contains(t, string(py), `__version__ = "`+version+`"`, "the command and the Python package have one version")
}

// Under a launcher (RANK and WORLD_SIZE set) a usage error is printed by
// rank 0 only, and the simulated backend refuses to join the launched job
// instead of running a world of its own in every process.
func TestUnderALauncher(t *testing.T) {
	t.Setenv("WORLD_SIZE", "4")
	for rank, wantOut := range map[string]bool{"0": true, "3": false} {
		t.Setenv("RANK", rank)
		code, _, errOut := hiercoll(t, "demo", "--m", "0")
		require.Equal(t, 2, code)
		require.Equal(t, wantOut, strings.Contains(errOut, "--m 0"), "rank %s: %q", rank, errOut)
	}
	t.Setenv("RANK", "0")
	code, _, errOut := hiercoll(t, "demo", "--backend", "sim")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--backend sim cannot join a launched job")
	code, _, errOut = hiercoll(t, "demo")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "no GPU is visible", "this machine has no GPU")
}

// The demo's time per call is the median call's, and the stage ends are
// that call's, so "final" is the same time.
func TestDemoTimeIsTheReportedCall(t *testing.T) {
	code, out, errOut := hiercoll(t, "demo", "--backend", "sim", "--nodes", "2", "--gpus", "2", "--m", "8", "--n", "16", "--calls", "4")
	require.Equal(t, 0, code, errOut)
	perCall := regexp.MustCompile(`time per call +(\S+) \(the median of 4 calls`).FindStringSubmatch(out)
	final := regexp.MustCompile(`final (\S+) \(that call's stages`).FindStringSubmatch(out)
	require.NotNil(t, perCall, out)
	require.NotNil(t, final, out)
	require.Equal(t, perCall[1], final[1])
	require.Contains(t, out, "PASS")
}

// doctor says which multicast switches the user set, and which the
// library sets itself.
func TestMulticastEnvReport(t *testing.T) {
	env := map[string]string{"NCCL_NVLS_ENABLE": "0"}
	got := multicastEnvReport(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.Equal(t, `NCCL_NVLS_ENABLE="0" (in the environment)
NVSHMEM_DISABLE_NVLS not set in the environment (hiercoll's NVSHMEM loader sets it to 1 in its own process)
TORCH_SYMM_MEM_DISABLE_MULTICAST not set in the environment (hiercoll launch sets it to 1 for the processes it starts)
HIERCOLL_ALLOW_MULTICAST not set in the environment (the NVLS engine stays off)
`, got)
}

// bench on the CPU: the table's rows follow each other, and the CSV leaves
// NCCL's columns empty when NCCL did not run.
func TestBenchCSVWithoutNCCL(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "b.csv")
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--n", "8",
		"--sizes", "64,200", "--iters", "1", "--reps", "1", "--csv", csvPath)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Contains(t, lines[len(lines)-3], "size(B)")
	require.Regexp(t, `^\s+64\s+32\s+bf16 `, lines[len(lines)-2])
	require.Regexp(t, `^\s+192\s+96\s+bf16 `, lines[len(lines)-1])
	csv, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.Len(t, rows, 3)
	header := strings.Split(rows[0], ",")
	for _, r := range rows[1:] {
		f := strings.Split(r, ",")
		require.Len(t, f, len(header), r)
		for i, name := range header {
			if strings.HasPrefix(name, "nccl_") || name == "max_abs_diff_vs_nccl" {
				require.Empty(t, f[i], "NCCL's column %s: %s", name, r)
			}
		}
	}
}

// bench --host-cost prints the Go path's enqueue time per call instead of
// the sweep.
func TestBenchHostCost(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--host-cost")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `host cost: .* per call`, out)
	require.Regexp(t, `\d+\.\d+ us per call`, out)
}
