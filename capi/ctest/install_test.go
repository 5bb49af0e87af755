package ctest

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
)

// TestPythonInstall runs python/tests/test_install.py against the library
// built here: "backend" calls the in-tree build backend's hooks (wheel
// contents and RECORD, errors, sdist); "venv" installs with pip
// --no-index into fresh virtual environments without setuptools or wheel
// (from the checkout, where the backend builds the library with Go; from
// scripts/build-wheel.sh's wheel of the library built here, with no Go on
// PATH; editable), each then running a simulated reduce-scatter. Not in
// -short: it makes three venvs and builds the library once more (with
// -trimpath, as the backend does).
func TestPythonInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("makes virtual environments and builds the library again: not in -short")
	}
	lib := library(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python package's install tests need it")
	}
	dir := filepath.Join(repoRoot(t), "python", "tests")
	for _, tc := range []struct{ name, tests string }{
		{"backend", "test_install.BuildBackendTest"},
		{"venv", "test_install.OfflineInstallTest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "-m", "unittest", "-v", tc.tests)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HIERCOLL_LIB="+lib, "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "python3 -m unittest %s:\n%s", tc.tests, out)
			t.Log(strings.TrimSpace(string(out)))
			if reason, ok := allSkipped(string(out)); ok {
				t.Skip(reason)
			}
		})
	}
}

// allSkipped reports whether unittest's output says every test was skipped
// (a class skipped in setUpClass runs 0 tests), with the skip reasons.
func allSkipped(out string) (string, bool) {
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests?`).FindStringSubmatch(out)
	skipped := regexp.MustCompile(`(?m)^OK \(skipped=(\d+)\)`).FindStringSubmatch(out)
	if ran == nil || skipped == nil || (ran[1] != "0" && ran[1] != skipped[1]) {
		return "", false
	}
	var why []string
	for _, m := range regexp.MustCompile(`(?m)skipped '(.*)'$`).FindAllStringSubmatch(out, -1) {
		why = append(why, m[1])
	}
	return "the Python tests skipped: " + strings.Join(why, "; "), true
}

func TestAllSkipped(t *testing.T) {
	for _, tc := range []struct {
		name, out, reason string
		skipped           bool
	}{
		{"class skipped", "setUpClass (test_install.OfflineInstallTest) ... skipped 'cannot make a virtual environment'\n\n" +
			"Ran 0 tests in 0.000s\n\nOK (skipped=1)\n", "the Python tests skipped: cannot make a virtual environment", true},
		{"every test skipped", "test_a (m.A.test_a) ... skipped 'no go'\ntest_b (m.A.test_b) ... skipped 'no go'\n\n" +
			"Ran 2 tests in 0.001s\n\nOK (skipped=2)\n", "the Python tests skipped: no go; no go", true},
		{"some skipped", "Ran 3 tests in 25.052s\n\nOK (skipped=1)\n", "", false},
		{"none skipped", "Ran 3 tests in 25.052s\n\nOK\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, skipped := allSkipped(tc.out)
			require.Equal(t, tc.skipped, skipped)
			require.Equal(t, tc.reason, reason)
		})
	}
}
