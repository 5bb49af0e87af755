//go:build cgo

package cuda_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAgainstFakeDriver runs this package's GPU tests in a child process
// whose loader finds a fake libcuda.so.1 and libnvrtc.so.13 built from
// testdata/fakecuda with the C compiler. They exercise the real cgo binding
// (symbol resolution with and without cuGetProcAddress_v2, the context rule,
// argument layouts, NVRTC's option array and log, the kernel cache) on
// machines without a GPU. It is skipped where there is no C compiler, and in
// the child itself.
func TestAgainstFakeDriver(t *testing.T) {
	if os.Getenv("HIERCOLL_FAKE_CUDA") != "" {
		t.Skip("already running against the fake driver")
	}
	if _, err := os.Stat(filepath.Join("testdata", "fakecuda", "libcuda.c")); err != nil {
		t.Skipf("the fake driver's sources are not here (a test binary run elsewhere): %v", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake driver: %v", cc, err)
	}
	dir := t.TempDir()
	build := func(out string, src string, extra ...string) {
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", filepath.Join(dir, out)}, extra...)
		if src != "" {
			args = append(args, filepath.Join("testdata", "fakecuda", src))
		} else {
			args = append(args, "-x", "c", "-")
		}
		cmd := exec.Command(cc, append(args, "-lpthread")...)
		if src == "" {
			cmd.Stdin = strings.NewReader("int hiercoll_fake_builtins;\n")
		}
		out2, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s\n%s", cc, strings.Join(args, " "), out2)
	}
	build("libcuda.so.1", "libcuda.c")
	build("libnvrtc.so.13", "libnvrtc.c")
	build("libnvrtc-builtins.so.13.0", "")

	for _, mode := range []struct {
		name string
		env  []string
	}{
		{"cuGetProcAddress_v2", nil},
		{"dlsym", []string{"FAKE_CUDA_NO_GPA=1"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^Test", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(),
				"HIERCOLL_FAKE_CUDA=1",
				"LD_LIBRARY_PATH="+dir,
				"HIERCOLL_NVRTC="+filepath.Join(dir, "libnvrtc.so.13"),
				"HIERCOLL_CACHE_DIR="+filepath.Join(dir, "cache-"+mode.name),
			)
			cmd.Env = append(cmd.Env, mode.env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "tests against the fake driver failed:\n%s", out)
			text := string(out)
			// Everything that needs a device ran; only the no-driver test and
			// this harness skip.
			skipped := regexp.MustCompile(`--- SKIP: (\S+)`).FindAllStringSubmatch(text, -1)
			var names []string
			for _, s := range skipped {
				names = append(names, s[1])
			}
			require.ElementsMatch(t, []string{"TestOpenWithoutDriver", "TestAgainstFakeDriver"}, names, "%s", text)
			require.Contains(t, text, "--- PASS: TestLaunchArgumentTypes")
			require.Contains(t, text, "--- PASS: TestSynchronizeTimesOut")
			require.Contains(t, text, "--- PASS: TestKernelDiskCache")
			// The multicast gate's proof runs only here.
			require.Contains(t, text, "--- PASS: TestMulticastRefusedCombinationsCallNothing")
			require.Contains(t, text, "--- PASS: TestMulticastSetupOrderAgainstFakeDriver")
			require.Contains(t, text, "--- PASS: TestNVLSEngineSetUpAgainstFakeDriver")
			t.Logf("child output:\n%s", text)
		})
	}
}
