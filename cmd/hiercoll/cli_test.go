package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/dtype"
)

// hiercoll runs the command line in-process and returns its exit status,
// stdout and stderr.
func hiercoll(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return hiercollCtx(t, context.Background(), args...)
}

// hiercollCtx is hiercoll with the context a signal would end.
func hiercollCtx(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, args[0], args[1:], &out, &errOut)
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
	stopped, stop := context.WithCancel(context.Background())
	stop()
	for rank, wantOut := range map[string]bool{"0": true, "3": false} {
		t.Setenv("RANK", rank)
		code, _, errOut := hiercollCtx(t, stopped, "demo", "--m", "0")
		require.Equal(t, 2, code)
		require.Equal(t, wantOut, strings.Contains(errOut, "--m 0"), "rank %s: %q", rank, errOut)
	}
	// A rank the launcher does not stop reports the mistake itself.
	defer func(d time.Duration) { usageWait = d }(usageWait)
	usageWait = time.Millisecond
	code, _, errOut := hiercoll(t, "demo", "--m", "0")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--m 0", "rank 3, not stopped")
	t.Setenv("RANK", "0")
	code, _, errOut = hiercoll(t, "demo", "--backend", "sim")
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
	require.Contains(t, out, "the CPU backend runs Go code in place of GPU kernels")
	// Like with like: the bytes that cross between nodes, per node. Blocks
	// of 2 rows x 16 bf16 = 64 B; hiercoll: 2 ranks x 1 block; a flat ring
	// of 4 ranks: 3 blocks over each node boundary.
	require.Contains(t, out, "per node: hiercoll 128 B (2 ranks x 1 block of 64 B), a flat ring 192 B (3 blocks); the ring sends 1.50x hiercoll's")
	// Progress on stderr, a line per step with the time so far.
	require.Regexp(t, `hiercoll demo: setting up: \[8, 16\] bf16 per rank, 4 ranks \(\d+\.\ds\)\n`, errOut)
	require.Regexp(t, `hiercoll demo: timed call 4 of 4 \(\d+\.\ds\)\n`, errOut)

	_, out, _ = hiercoll(t, "demo", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--m", "8", "--n", "16", "--calls", "1")
	require.Contains(t, out, "(the median of 1 call,")
	require.NotContains(t, out, "across nodes", "one node: nothing crosses")
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

// bench --register on the CPU: the pull engine reads the plain buffer in
// place, registered once, whole and in rounds (--max-symm); the heading
// says so and the rows' variant ends in "registered" in the CSV and JSON
// (rs2d's tests check the numbers). Another engine is refused, naming the
// pull engine, and so is --register with --copy-in.
func TestBenchRegister(t *testing.T) {
	for _, extra := range [][]string{nil, {"--max-symm", "20K"}} {
		csvPath := filepath.Join(t.TempDir(), "r.csv")
		args := append([]string{"bench", "--backend", "sim", "--nodes", "1", "--gpus", "4", "--n", "256", "--engine", "pull",
			"--sizes", "8K,64K", "--iters", "2", "--reps", "1", "--register", "--csv", csvPath, "--json"}, extra...)
		code, out, errOut := hiercoll(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "registered once (Context.Register) and read in place")
		if extra != nil {
			require.Contains(t, errOut, "rounds of", "the bound puts the pull engine in rounds")
		}
		rows := jsonLines(t, out)
		require.Len(t, rows, 2)
		for _, r := range rows {
			require.True(t, strings.HasSuffix(r["variant"].(string), " registered"), "variant %v", r["variant"])
		}
		csv, err := os.ReadFile(csvPath)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
		require.Len(t, lines, 3)
		for _, l := range lines[1:] {
			require.Contains(t, strings.Split(l, ",")[0], " registered", l)
		}
	}
	code, _, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--n", "8", "--engine", "sm",
		"--sizes", "64", "--iters", "1", "--reps", "1", "--register")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "pull engine")
	code, _, errOut = hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--engine", "pull", "--register", "--copy-in")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "pick one")
}

// bench --input-offset puts the plain buffer past a 16-byte aligned base:
// the heading says so, the calls run (copied in, registered, and in rounds
// under a bound; the pull engine's tests check the sums at such bases), and
// an offset past 15 bytes is refused.
func TestBenchInputOffset(t *testing.T) {
	for _, extra := range [][]string{{"--copy-in"}, {"--register"}, {"--copy-in", "--max-symm", "20K"}} {
		args := append([]string{"bench", "--backend", "sim", "--nodes", "1", "--gpus", "4", "--n", "256", "--engine", "pull",
			"--sizes", "8K,64K", "--iters", "2", "--reps", "1", "--input-offset", "6", "--json"}, extra...)
		code, out, errOut := hiercoll(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "the plain buffer lies 6 bytes past a 16-byte aligned base")
		require.Len(t, jsonLines(t, out), 2)
	}
	code, _, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--n", "8", "--sizes", "64", "--input-offset", "16")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "want 0 to 15")
}

// bench --trace follows each size with one more call, traced: rank 0's
// stage times, with each round's end and its staging copy's for a call in
// rounds (--max-symm), as many of each as rounds; without the bound a call
// has no rounds to report.
func TestBenchTrace(t *testing.T) {
	for _, extra := range [][]string{nil, {"--max-symm", "20K"}} {
		args := append([]string{"bench", "--backend", "sim", "--nodes", "1", "--gpus", "4", "--n", "256", "--engine", "pull",
			"--sizes", "8K,64K", "--iters", "2", "--reps", "1", "--copy-in", "--trace"}, extra...)
		code, out, errOut := hiercoll(t, args...)
		require.Equal(t, 0, code, errOut)
		traced := regexp.MustCompile(`traced on rank 0: the call [0-9.]+ us(; its ([0-9]+) rounds ended at ([0-9. ]+) us, their staging copies at ([0-9. ]+) us)?\n`).FindAllStringSubmatch(out, -1)
		require.Len(t, traced, 2, "a traced line per size:\n%s", out)
		if extra == nil {
			for _, m := range traced {
				require.Empty(t, m[1], "no rounds without a bound: %q", m[0])
			}
			continue
		}
		rounds, err := strconv.Atoi(traced[1][2])
		require.NoError(t, err, traced[1][0])
		require.Greater(t, rounds, 1, traced[1][0])
		require.Len(t, strings.Fields(traced[1][3]), rounds, traced[1][0])
		require.Len(t, strings.Fields(traced[1][4]), rounds, traced[1][0])
	}
}

// bench --capture times graph launches of captured calls (the simulated
// GPUs capture too), says so in the table and the JSON, and asks for the
// graph-replayable signals it needs.
func TestBenchCapture(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--engine", "pull", "--graphs", "on",
		"--capture", "--sizes", "64K", "--iters", "2", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "captured: each measurement is one CUDA-graph launch")
	require.Contains(t, out, `"captured":true`)
	code, _, errOut = hiercoll(t, "bench", "--backend", "sim", "--capture", "--graphs", "on,off")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "add --graphs on")
}

// bench-gemm --capture times graph launches of each path's call captured
// once, with the replayable signals (--graphs on), which it asks for; the
// checks against fp64 still pass.
func TestBenchGemmCapture(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench-gemm", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--graphs", "on",
		"--capture", "--shapes", "32x24x16", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "captured: each timed call is one graph launch")
	require.Contains(t, out, `"captured":true`)
	require.Contains(t, out, `"bound_use"`)
	code, out, errOut = hiercoll(t, "bench-gemm", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--graphs", "on",
		"--shapes", "32x24x16", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "replayable signals (Config.Graphs), calls enqueued directly")
	require.Contains(t, out, `"captured":false`)
	for _, args := range [][]string{{"--capture"}, {"--capture", "--graphs", "off"}, {"--graphs", "both"}} {
		code, _, errOut = hiercoll(t, append([]string{"bench-gemm", "--backend", "sim"}, args...)...)
		require.NotEqual(t, 0, code, args)
		require.Contains(t, errOut, "--graphs", args)
	}
}

// bench --one-shot takes a list (off, 0 for the default, sizes), one
// variant each, named by it; a bad value names the flag.
func TestBenchOneShot(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--engine", "pull",
		"--one-shot", "0,off,64K", "--sizes", "64K", "--iters", "1", "--reps", "1")
	require.Equal(t, 0, code, errOut)
	for _, v := range []string{`"pull sms0"`, `"pull sms0 oneshot-off"`, `"pull sms0 oneshot65536"`} {
		require.Contains(t, out, "variant "+v)
	}
	code, _, errOut = hiercoll(t, "bench", "--backend", "sim", "--one-shot", "soon")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "--one-shot")
}

// bench --host-cost prints the Go path's enqueue time per call instead of
// the sweep.
func TestBenchHostCost(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--host-cost")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `host cost: .* per call`, out)
	require.Regexp(t, `\d+\.\d+ us per call`, out)
}

// Command-line details a user trips on: each mistake names what was typed
// and what the command takes.
func TestFlagMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// dtype's own error lists every element type, e4m3 included; the
		// command lists only those it takes.
		{[]string{"demo", "--dtype", "fp64"}, `--dtype "fp64": unknown element type; this command takes bf16, fp16, fp32, int32`},
		{[]string{"bench-mm", "--dtype", "half-ish"}, `this command takes bf16, fp16`},
		{[]string{"bench", "--sizes", "1M,-4M"}, `size "-4M": want a positive number`},
		{[]string{"demo", "--timeout", "5"}, `a duration needs its unit: 5s for 5 seconds`},
		{[]string{"demo", "--timeout", "soon"}, `want a duration with its unit, such as 30s`},
		// Flags a command would ignore are not defined for it.
		{[]string{"floors", "--engine", "x"}, "flag provided but not defined: -engine"},
		{[]string{"floors", "--transport", "nccl"}, "flag provided but not defined: -transport"},
		{[]string{"bench-mm", "--nodes", "7"}, "flag provided but not defined: -nodes"},
		{[]string{"bench-mm", "--chunks", "junk"}, "flag provided but not defined: -chunks"},
		{[]string{"bench-gemm", "--engine", "ring"}, "flag provided but not defined: -engine"},
		// One setting where one is run; bench measures lists.
		{[]string{"verify", "--engine", "ring,sm"}, "--engine ring,sm: this command runs one setting"},
		{[]string{"demo", "--chunks", "1,2"}, "--chunks 1,2: this command runs one setting"},
		{[]string{"bench-gemm", "--push-share", "101"}, "--push-share 101: want -1 (none), 0 (estimated) or a percentage"},
	} {
		code, out, errOut := hiercoll(t, tc.args...)
		require.Equal(t, 2, code, "%q: %s", tc.args, errOut)
		require.Empty(t, out, "%q", tc.args)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%q: one line:\n%s", tc.args, errOut)
	}
}

// Every command's help works (bench-gemm's had a flag named -help), says
// what a list-valued flag does only where lists are taken, and speaks to
// a user, not to the project.
func TestEveryCommandsHelp(t *testing.T) {
	for cmd := range commands {
		for _, h := range []string{"-h", "--help"} {
			code, out, errOut := hiercoll(t, cmd, h)
			require.Equal(t, 0, code, "%s %s: %s", cmd, h, errOut)
			require.Empty(t, errOut, "%s %s", cmd, h)
			require.True(t, strings.HasPrefix(out, "usage: hiercoll "+cmd), "%s %s:\n%s", cmd, h, out)
			require.NotContains(t, out, "lent machines", cmd)
			require.NotContains(t, out, "bench takes a list", cmd)
			require.NotRegexp(t, `flags:\n*$`, out, "%s: an empty flag list", cmd)
			require.Equal(t, cmd == "bench", strings.Contains(out, "a comma-separated list measures each value"), cmd)
		}
	}
	_, out, _ := hiercoll(t, "bench-gemm", "-h")
	require.Contains(t, out, "-push-share int")
}

// progressLine is a progress line on stderr: a step and the time so far.
var progressLine = regexp.MustCompile(`(?m)^hiercoll \S+: .* \(\d+\.\ds\)\n`)

// A failure of every simulated rank is printed once, not once per rank;
// what the simulated GPUs cannot do is refused before the world starts,
// and so is a world too large to simulate.
func TestErrorsOncePerRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"demo", "--transport", "nccl"}, 2, "--transport nccl needs GPUs"},
		{[]string{"bench", "--transport", "nvshmem", "--sizes", "1M"}, 2, "--transport nvshmem needs GPUs"},
		{[]string{"demo", "--gpus", "100000"}, 2, "--nodes 2 x --gpus 100000: the CPU backend simulates at most 256 GPUs"},
		{[]string{"demo", "--nodes", "1000000"}, 2, "--nodes 1000000 x --gpus 4: the CPU backend simulates at most 256 GPUs"},
		{[]string{"floors", "--nodes", "4611686018427387904", "--gpus", "4"}, 2, "simulates at most 256 GPUs"},
		{[]string{"demo", "--timeout", "1ns"}, 1, "ranks 0-7: "},
	} {
		code, out, errOut := hiercoll(t, tc.args...)
		require.Equal(t, tc.code, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		errOut = progressLine.ReplaceAllString(errOut, "")
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%q: one line besides the progress:\n%s", tc.args, errOut)
		if tc.code == 2 {
			require.Empty(t, out, "%q: refused before anything ran", tc.args)
		}
	}
	// Every rank's allocation fails alike, each naming its own rank.
	t.Setenv("HIERCOLL_SIM_MEMORY", "abc")
	code, _, errOut := hiercoll(t, "demo", "--m", "8", "--n", "8")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, `ranks 0-7: `)
	require.Contains(t, errOut, `HIERCOLL_SIM_MEMORY="abc"`)
	require.Equal(t, 1, strings.Count(progressLine.ReplaceAllString(errOut, ""), "\n"), errOut)
}

// Under hiercoll launch, a mistake every rank makes reaches the user once,
// from rank 0, and the launcher names rank 0 as the rank that failed (the
// other ranks wait to be stopped). The ranks are this test binary running
// main (TestMain); repeated, as the order in which ranks fail varied.
func TestLaunchReportsTheMistakeOnce(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(runMainEnv, "1")
	for range 6 {
		code, out, errOut := hiercoll(t, "launch", "--nproc", "4", "--", exe, "demo", "--m", "0")
		require.Equal(t, 1, code, errOut)
		require.Empty(t, out)
		require.Equal(t, 1, strings.Count(errOut, "--m 0: want a positive number"), errOut)
		require.Contains(t, errOut, "[rank 0] hiercoll demo: --m 0", errOut)
		require.Contains(t, errOut, "launch: rank 0 (pid", errOut)
	}
}

// jsonLines decodes stdout as one JSON object per line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &obj), "not a JSON object: %q", line)
		objs = append(objs, obj)
	}
	return objs
}

// --json: stdout holds one JSON object per row or result, and nothing
// else (the report goes to stderr); on the CPU backend each says it is
// simulated.
func TestJSONOutput(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--n", "8",
		"--sizes", "64,200", "--iters", "1", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	rows := jsonLines(t, out)
	require.Len(t, rows, 2)
	require.EqualValues(t, 64, rows[0]["bytes_per_rank"])
	require.EqualValues(t, 192, rows[1]["bytes_per_rank"])
	require.Equal(t, true, rows[0]["simulated"])
	require.Greater(t, rows[0]["hiercoll_us"], 0.0)
	require.NotContains(t, rows[0], "nccl_us", "NCCL did not run")
	require.Contains(t, errOut, "size(B)", "the table, on stderr")

	code, out, errOut = hiercoll(t, "bench-gemm", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--shapes", "32x24x16", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	rows = jsonLines(t, out)
	require.Len(t, rows, 1)
	require.EqualValues(t, 32, rows[0]["m"])
	require.Greater(t, rows[0]["overlap_us"], 0.0)

	code, out, errOut = hiercoll(t, "verify", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--dtypes", "fp32", "--calls", "1", "--repeat", "2", "--json")
	require.Equal(t, 0, code, errOut)
	rows = jsonLines(t, out)
	require.Len(t, rows, len(benchmarks.DefaultCases(false))+2, "each case, the repeat, the bad input")
	for _, r := range rows {
		require.Equal(t, true, r["ok"], r)
	}
	require.Equal(t, "bad-input", rows[len(rows)-1]["check"])
	require.Contains(t, errOut, "PASS")

	code, out, errOut = hiercoll(t, "doctor", "--json")
	require.Equal(t, 0, code, errOut)
	rows = jsonLines(t, out)
	var names []string
	for _, r := range rows {
		names = append(names, r["check"].(string))
		require.Contains(t, r, "ok")
		require.NotEmpty(t, r["detail"])
	}
	require.Subset(t, names, []string{"cuda", "nvml", "nccl", "nvshmem", "multicast-env"})
}

// Simulated results say so: in the table, the CSV's last column and the
// chart's title.
func TestSimulatedResultsSaySo(t *testing.T) {
	dir := t.TempDir()
	csvPath, pngPath := filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.png")
	code, out, errOut := hiercoll(t, "bench", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--n", "8",
		"--sizes", "64,200", "--iters", "1", "--reps", "1", "--csv", csvPath, "--png", pngPath)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "SIMULATED: the CPU backend runs Go code in place of GPU kernels")
	csv, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.True(t, strings.HasSuffix(lines[0], ",simulated"), lines[0])
	require.True(t, strings.HasSuffix(lines[1], ",true"), lines[1])
	rows := []benchmarks.BenchRow{{Variant: "sm", Bytes: 1 << 20, Time: time.Millisecond, Simulated: true}}
	require.Contains(t, benchChart(rows, 2, dtype.BF16).Title, "SIMULATED")
	rows[0].Simulated = false
	require.NotContains(t, benchChart(rows, 2, dtype.BF16).Title, "SIMULATED")

	code, out, errOut = hiercoll(t, "bench-gemm", "--backend", "sim", "--nodes", "1", "--gpus", "2", "--reps", "1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "SIMULATED")
}

// bench-gemm --gemm own on the CPU: a default shape the own GEMM cannot
// compute (rows of A not a multiple of 16 bytes) is skipped with the
// reason, and the others run.
func TestBenchGemmOwnSkipsWhatItCannotCompute(t *testing.T) {
	code, out, errOut := hiercoll(t, "bench-gemm", "--backend", "sim", "--gemm", "own", "--reps", "1", "--json")
	require.Equal(t, 0, code, errOut)
	rows := jsonLines(t, out)
	require.Len(t, rows, len(benchmarks.DefaultGemmShapes(false, 8, dtype.Invalid)))
	require.Greater(t, rows[0]["overlap_us"], 0.0)
	require.Contains(t, rows[1]["skipped"], "not a multiple of 16 bytes")
	require.Regexp(t, `64x33x32 +skipped: .*not a multiple of 16 bytes`, errOut)
}

// bench-gemm --input e4m3 on the CPU: the default shapes are ones the own
// GEMM (e4m3's only one) computes, the second with a k tail past its
// 128-deep scale blocks, so that each scaling runs and is checked against
// fp64 (none skipped).
func TestBenchGemmE4M3DefaultsRunOnSim(t *testing.T) {
	for _, scaling := range []string{"tensor", "block"} {
		code, out, errOut := hiercoll(t, "bench-gemm", "--backend", "sim", "--input", "e4m3", "--scaling", scaling,
			"--reps", "1", "--json")
		require.Equal(t, 0, code, errOut)
		require.NotContains(t, errOut, "skipped", scaling)
		rows := jsonLines(t, out)
		require.Len(t, rows, len(benchmarks.DefaultGemmShapes(false, 8, dtype.E4M3)), scaling)
		for i, want := range []float64{16, 144} {
			require.Equal(t, want, rows[i]["k_local"], scaling)
			require.Greater(t, rows[i]["overlap_us"], 0.0, scaling)
			require.Greater(t, rows[i]["bound_use"], 0.0, scaling)
			require.LessOrEqual(t, rows[i]["bound_use"], 1.0, scaling)
		}
	}
}
