package ctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlock returns the first fenced block of lang in the README's
// section "Without a GPU you get…": the examples that section shows run as
// written, and these tests keep them so.
func readmeBlock(t *testing.T, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	text := string(b)
	start := strings.Index(text, "## Without a GPU you get")
	require.GreaterOrEqual(t, start, 0, "README has no section \"Without a GPU you get\"")
	text = text[start:]
	open := "```" + lang + "\n"
	i := strings.Index(text, open)
	require.GreaterOrEqual(t, i, 0, "no %s example in the README's section", lang)
	body := text[i+len(open):]
	j := strings.Index(body, "```")
	require.GreaterOrEqual(t, j, 0, "the README's %s example is not closed", lang)
	return body[:j]
}

// The README's C example, compiled as its first line says and run: every
// rank prints its row of the sum (row i of the input is rank + i on 4 ranks,
// so rank r's row sums to 4r + 6).
func TestReadmeCExample(t *testing.T) {
	lib := library(t)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot compile the README's C example")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sim_rs.c")
	require.NoError(t, os.WriteFile(src, []byte(readmeBlock(t, "c")), 0o644))
	bin := filepath.Join(dir, "sim_rs")
	libDir := filepath.Dir(lib)
	out, err := exec.Command(gcc, "-std=c11", "-Wall", "-Werror", "-I", filepath.Join(repoRoot(t), "capi"), "-o", bin, src,
		"-L", libDir, "-lhiercoll", "-lpthread", "-Wl,-rpath,"+libDir).CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	got, err := run(t, 2*time.Minute, bin)
	require.NoError(t, err, "%s", got)
	require.Equal(t, "rank 0: 6 6 6\nrank 1: 10 10 10\nrank 2: 14 14 14\nrank 3: 18 18 18\n", got)
}

// The README's Python example, run as written on simulated GPUs: it prints
// each rank's row of the sum.
func TestReadmePythonExample(t *testing.T) {
	lib := library(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the README's Python example needs it")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sim_rs.py")
	require.NoError(t, os.WriteFile(src, []byte(readmeBlock(t, "python")), 0o644))
	cmd := exec.Command(python, src)
	cmd.Env = append(os.Environ(), "HIERCOLL_LIB="+lib, "PYTHONPATH="+filepath.Join(repoRoot(t), "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python3 %s:\n%s", src, out)
	require.Equal(t, "[[6, 6, 6], [10, 10, 10], [14, 14, 14], [18, 18, 18]]\n", string(out))
}
