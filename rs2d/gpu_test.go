package rs2d_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/launch"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

const envDieChild = "HIERCOLL_RS2D_DIE_CHILD"

// runRanks runs this test binary's test as n processes, one rank each (with
// env added to theirs), within timeout, and returns their output, which it
// logs; every process must exit cleanly.
func runRanks(t *testing.T, n int, test string, env []string, timeout time.Duration) string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := launch.Run(ctx, launch.Spec{
		NProc:   n,
		Command: []string{os.Args[0], "-test.run=^" + test + "$", "-test.v"},
		Env:     env,
		Stdout:  &out, Stderr: &out,
	})
	t.Log(out.String())
	require.NoError(t, err)
	return out.String()
}

// On GPUs, one process per GPU (two sharing the one GPU where there is
// only one): the last rank exits right after joining the context, as a
// killed rank would. Every other rank's call must fail with a timeout when
// its stream is synchronized (not hang), and Close must return.
func TestGPURankDiesMidRun(t *testing.T) {
	if engine := os.Getenv(envDieChild); engine != "" {
		dieChild(t, engine)
		return
	}
	n := world.GPUs()
	var env []string
	switch {
	case n == 0:
		t.Skip("needs a GPU (the CUDA driver sees none)")
	case n == 1:
		n, env = 2, []string{"HIERCOLL_DEVICE=0"}
	}
	for _, engine := range []string{"sm", "copy", "ring"} {
		t.Run(engine, func(t *testing.T) {
			out := runRanks(t, n, "TestGPURankDiesMidRun", append([]string{envDieChild + "=" + engine}, env...), 2*time.Minute)
			for r := 0; r < n-1; r++ {
				require.Contains(t, out, fmt.Sprintf("[rank %d] SURVIVOR OK", r))
			}
		})
	}
}

func dieChild(t *testing.T, engineName string) {
	engine, err := rs2d.ParseEngine(engineName)
	require.NoError(t, err)
	ctx := context.Background()
	// Progress goes to stdout at once, so that a hang shows where it is;
	// a watchdog prints every goroutine's stack (the driver call a hang is
	// in) if the child is still here long after it should have finished.
	begin := time.Now()
	progress := func(format string, args ...any) {
		fmt.Printf("%v: %s\n", time.Since(begin).Round(time.Millisecond), fmt.Sprintf(format, args...))
	}
	watchdog := time.AfterFunc(45*time.Second, func() {
		buf := make([]byte, 1<<20)
		progress("WATCHDOG: still running; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	})
	defer watchdog.Stop()
	w, err := world.Process(ctx)
	require.NoError(t, err)
	r := w.Ranks[0]
	const rowsPer, n = 64, 1024
	m := rowsPer * r.Comm.Size()
	rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: m, N: n, DType: dtype.BF16, Engine: engine, Timeout: 5 * time.Second})
	require.NoError(t, err)
	progress("context made")
	if r.Comm.Rank() == r.Comm.Size()-1 {
		os.Exit(0) // gone without a word, as a killed process
	}
	in, err := r.Dev.Alloc(int64(m * n * 2))
	require.NoError(t, err)
	out, err := r.Dev.Alloc(int64(rowsPer * n * 2))
	require.NoError(t, err)
	s, err := r.Dev.NewStream(device.Normal)
	require.NoError(t, err)
	progress("buffers ready")
	start := time.Now()
	require.NoError(t, rs.ReduceScatter(ctx,
		rs2d.Tensor{Ptr: in, Rows: m, Cols: n, DType: dtype.BF16},
		rs2d.Tensor{Ptr: out, Rows: rowsPer, Cols: n, DType: dtype.BF16}, s))
	progress("call enqueued")
	syncCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = s.Synchronize(syncCtx)
	took := time.Since(start)
	progress("synchronize returned: %v", err)
	require.Error(t, err)
	require.True(t, errors.Is(err, device.ErrTimeout), "want a timeout, got %v", err)
	rs2d.SetCloseStep(func(step string) { progress("close: %s", step) })
	closeErr := rs.Close() // must return, with the stuck work reported
	progress("close returned: %v", closeErr)
	t.Logf("synchronize: %v after %v; close: %v", err, took.Round(time.Millisecond), closeErr)
	require.Less(t, took, 15*time.Second)
	fmt.Printf("SURVIVOR OK (%s)\n", strings.Split(err.Error(), "\n")[0])
	os.Exit(0) // the stuck kernel goes with the process
}

const envGraphChild = "HIERCOLL_RS2D_GRAPH_CHILD"

// On GPUs: a call captured in a CUDA graph replays correctly 100 times on
// fresh inputs (outputs poisoned before each), mixed with eager and
// rejected calls, on 1 rank and on 2 ranks (sharing the GPU where there is
// one): the SM engine, the copy engine, and the copy engine beside GEMM
// signals captured with it; on 3 ranks the ring and the pull engine's ring
// for large calls (from every block).
func TestGPUGraphReplays(t *testing.T) {
	if cfg := os.Getenv(envGraphChild); cfg != "" {
		graphChild(t, cfg)
		return
	}
	gpus := world.GPUs()
	if gpus == 0 {
		t.Skip("needs a GPU (the CUDA driver sees none)")
	}
	type run struct {
		ranks int
		cfg   string
	}
	var runs []run
	for _, ranks := range []int{1, 2} {
		for _, cfg := range []string{"sm", "copy", "gemm"} {
			runs = append(runs, run{ranks, cfg})
		}
	}
	runs = append(runs, run{3, "ring"}, run{3, "pull-ring"})
	for _, c := range runs {
		ranks, cfg := c.ranks, c.cfg
		t.Run(fmt.Sprintf("%dranks/%s", ranks, cfg), func(t *testing.T) {
			env := []string{envGraphChild + "=" + cfg, fmt.Sprintf("HIERCOLL_GRAPH_SEED=%d", time.Now().UnixNano())}
			if ranks > gpus {
				env = append(env, "HIERCOLL_DEVICE=0")
			}
			out := runRanks(t, ranks, "TestGPUGraphReplays", env, 3*time.Minute)
			for r := 0; r < ranks; r++ {
				require.Contains(t, out, fmt.Sprintf("[rank %d] GRAPHS OK", r))
			}
		})
	}
}

func graphChild(t *testing.T, name string) {
	cfg := map[string]rs2d.Config{
		"sm":        {Engine: rs2d.EngineSM},
		"copy":      {Engine: rs2d.EngineCopy},
		"gemm":      {OverlapWithGEMM: true},
		"ring":      {Engine: rs2d.EngineRing},
		"pull-ring": {Engine: rs2d.EnginePull},
	}[name]
	var knobs rs2d.Tuning
	if name == "pull-ring" {
		knobs = rs2d.Tuning{RingFromBytes: 1, OneShotBytes: -1}
	}
	var seed uint64
	_, err := fmt.Sscan(os.Getenv("HIERCOLL_GRAPH_SEED"), &seed)
	require.NoError(t, err)
	w, err := world.Process(context.Background())
	require.NoError(t, err)
	defer w.Close()
	spec := graphSpec{shape: w.Shape, cfg: cfg, knobs: knobs, rowsPer: 64, n: 1000, replays: 100, eagerEvery: 7, rejectEvery: 11}
	require.NoError(t, graphRanks(t, w, spec, seed))
	fmt.Printf("GRAPHS OK (%s, %d replays)\n", name, spec.replays)
}
