//go:build cgo

package cuda_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device/cuda"
)

// TestBLASAgainstFakeDriver runs the GEMM tests above in a child process
// against the fake driver (testdata/fakecuda) and a fake cuBLAS
// (testdata/fakecublas) built with the C compiler: the cgo trampolines, the
// context rule, the library search with its libcublasLt preload and the
// row-major to column-major mapping then run on machines without a GPU.
func TestBLASAgainstFakeDriver(t *testing.T) {
	if os.Getenv("HIERCOLL_FAKE_CUDA") != "" {
		t.Log("already running against the fake driver") // not a skip: TestAgainstFakeDriver counts those
		return
	}
	if _, err := os.Stat(filepath.Join("testdata", "fakecublas", "libcublas.c")); err != nil {
		t.Skipf("the fake cuBLAS's sources are not here (a test binary run elsewhere): %v", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fakes: %v", cc, err)
	}
	dir := t.TempDir()
	build := func(out, src string, libs ...string) {
		args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", filepath.Join(dir, out)}
		if src != "" {
			args = append(args, src)
		} else {
			args = append(args, "-x", "c", "-")
		}
		cmd := exec.Command(cc, append(args, libs...)...)
		if src == "" {
			cmd.Stdin = strings.NewReader("int hiercoll_fake_cublaslt;\n")
		}
		out2, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s\n%s", cc, strings.Join(args, " "), out2)
	}
	build("libcuda.so.1", filepath.Join("testdata", "fakecuda", "libcuda.c"), "-lpthread")
	build("libcublasLt.so.13", "")
	build("libcublas.so.13", filepath.Join("testdata", "fakecublas", "libcublas.c"), "-ldl", "-lm")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestGemm", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"HIERCOLL_FAKE_CUDA=1",
		"HIERCOLL_FAKE_CUBLAS=1",
		"LD_LIBRARY_PATH="+dir,
		cuda.EnvCUBLAS+"="+filepath.Join(dir, "libcublas.so.13"),
		"HIERCOLL_CACHE_DIR="+filepath.Join(dir, "cache"),
	)
	out, err := cmd.CombinedOutput()
	text := string(out)
	require.NoError(t, err, "GEMM tests against the fakes failed:\n%s", text)
	var skipped []string
	for _, s := range regexp.MustCompile(`--- SKIP: (\S+)`).FindAllStringSubmatch(text, -1) {
		skipped = append(skipped, s[1])
	}
	require.ElementsMatch(t, []string{"TestGemmOrderedOnStream"}, skipped, "%s", text)
	require.Contains(t, text, "--- PASS: TestGemmCuBLAS")
	require.Contains(t, text, "cuBLAS 13.0.7 at "+filepath.Join(dir, "libcublas.so.13"))
	t.Logf("child output:\n%s", text)
}
