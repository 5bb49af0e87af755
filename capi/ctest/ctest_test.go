package ctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// The shared library is built once per test binary, into this directory.
var built struct {
	once sync.Once
	dir  string
	lib  string
	err  error
	skip string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// repoRoot is the module's root (this package is capi/ctest).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// library builds libhiercoll.so (once) and returns its path, or skips.
func library(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.skip = "no go command on PATH to build the shared library"
			return
		}
		if out, err := exec.Command(goTool, "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
			built.skip = "cgo is disabled (CGO_ENABLED != 1): no c-shared build"
			return
		}
		if _, err := exec.LookPath("gcc"); err != nil {
			built.skip = "gcc not found: cgo cannot build the shared library"
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "hiercoll-capi-"); built.err != nil {
			return
		}
		built.lib = filepath.Join(built.dir, "libhiercoll.so")
		cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", built.lib, "github.com/seed12530e24/hiercoll/capi")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build -buildmode=c-shared ./capi: %v\n%s", err, out)
		}
	})
	if built.skip != "" {
		t.Skip(built.skip)
	}
	require.NoError(t, built.err)
	return built.lib
}

// cProgram compiles testdata/main.c against the library and returns the binary.
func cProgram(t *testing.T) string { return compileC(t, "main.c") }

// compileC compiles testdata/src against the library and returns the binary.
func compileC(t *testing.T, src string) string {
	t.Helper()
	lib := library(t)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot compile the C test program")
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	dir := filepath.Dir(lib)
	cmd := exec.Command(gcc, "-std=c11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Wextra", "-Werror",
		"-I", filepath.Join(repoRoot(t), "capi"), "-o", bin, filepath.Join("testdata", src),
		"-L", dir, "-lhiercoll", "-Wl,-rpath,"+dir, "-pthread")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	return bin
}

func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish within %v: %w", name, timeout, ctx.Err())
	}
	return out.String(), err
}

// TestCABI runs the 2 x 2 simulated world through the C ABI from 4 C threads:
// int32 reduce-scatters checked bit for bit against the CPU sum (M below and
// at MaxM, repeated calls, the default stream, GEMM signals), bad input with
// HC_ERR_INVALID and readable per-thread messages, and teardown.
func TestCABI(t *testing.T) {
	bin := cProgram(t)
	out, err := run(t, 2*time.Minute, bin)
	require.NoError(t, err, "C test program:\n%s", out)
	t.Log(strings.TrimSpace(out))
}

// TestPythonCtypes runs the Python package's torch-free tests (ctypes over
// the library, a simulated world) when python3 is here.
func TestPythonCtypes(t *testing.T) {
	lib := library(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python package's ctypes tests need it")
	}
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "-v", "test_ctypes_sim")
	cmd.Dir = filepath.Join(root, "python", "tests")
	cmd.Env = append(os.Environ(), "HIERCOLL_LIB="+lib, "PYTHONPATH="+filepath.Join(root, "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python3 -m unittest test_ctypes_sim:\n%s", out)
	t.Log(strings.TrimSpace(string(out)))
}

// TestABIOverhead compares the host time of an enqueue-only reduce-scatter
// through the C ABI with the same call made from Go, on a 1 x 1 simulated
// world, and logs both. (The simulated enqueue is itself a few µs and
// noisy, so the difference is reported, not asserted.)
func TestABIOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("timing: not in -short")
	}
	bin := cProgram(t)
	const calls = 5000
	out, err := run(t, time.Minute, bin, "bench", strconv.Itoa(calls))
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`c_abi_ns_per_call (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	cNS, _ := strconv.Atoi(m[1])
	goNS := goEnqueueNS(t, calls)
	t.Logf("host time per enqueue-only reduce-scatter (sim, 1x1, int32 [1, 8]): C ABI %d ns, Go API %.0f ns, ABI overhead about %.0f ns",
		cNS, goNS, float64(cNS)-goNS)
}

// goEnqueueNS is the Go side of TestABIOverhead: the same loop as the C
// program's bench, through rs2d directly.
func goEnqueueNS(t *testing.T, calls int) float64 {
	w, err := world.Sim(bootstrap.Shape{Nodes: 1, LocalSize: 1}, world.SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	r := w.Ranks[0]
	ctx := context.Background()
	const n, batch = 8, 50
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 1, N: n, DType: dtype.I32})
	require.NoError(t, err)
	defer func() { require.NoError(t, rs.Close()) }()
	s, err := r.Dev.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	in, err := r.Dev.Alloc(4 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Dev.Free(in)) }()
	out, err := r.Dev.Alloc(4 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Dev.Free(out)) }()
	inT := rs2d.Tensor{Ptr: in, Rows: 1, Cols: n, DType: dtype.I32}
	outT := rs2d.Tensor{Ptr: out, Rows: 1, Cols: n, DType: dtype.I32}
	var total time.Duration
	done := 0
	for warm := 1; warm >= 0; warm-- {
		todo := calls
		if warm == 1 {
			todo = 4 * batch
		}
		for i := 0; i < todo; i += batch {
			t0 := time.Now()
			for range batch {
				if err := rs.ReduceScatter(ctx, inT, outT, s); err != nil {
					t.Fatal(err)
				}
			}
			d := time.Since(t0)
			require.NoError(t, s.Synchronize(ctx))
			if warm == 0 {
				total += d
				done += batch
			}
		}
	}
	return float64(total.Nanoseconds()) / float64(done)
}
