package dl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCandidatesOrder(t *testing.T) {
	sp := t.TempDir()
	wheel := filepath.Join("nvidia", "x", "lib", "libx.so.1")
	require.NoError(t, os.MkdirAll(filepath.Join(sp, filepath.Dir(wheel)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sp, wheel), nil, 0o644))
	t.Setenv("PYTHONPATH", sp)
	t.Setenv("HIERCOLL_TEST_LIB", "/explicit/libx.so.1")
	libs, searched := Candidates("HIERCOLL_TEST_LIB", "libx.so.1", wheel)
	require.Equal(t, []string{"/explicit/libx.so.1", "libx.so.1", filepath.Join(sp, wheel)}, libs[:3])
	require.Equal(t, sp, searched[0])

	t.Setenv("HIERCOLL_TEST_LIB", "")
	libs, _ = Candidates("HIERCOLL_TEST_LIB", "libx.so.1", filepath.Join("nvidia", "absent.so"))
	require.Equal(t, "libx.so.1", libs[0], "no environment override, no wheel copy: the soname alone first")
}

func TestSitePackagesOnceEach(t *testing.T) {
	sp := t.TempDir()
	t.Setenv("PYTHONPATH", sp+string(os.PathListSeparator)+sp+string(os.PathListSeparator)+"/nonexistent/dir")
	dirs := SitePackages()
	n := 0
	for _, d := range dirs {
		if d == sp {
			n++
		}
		require.NotEqual(t, "/nonexistent/dir", d)
	}
	require.Equal(t, 1, n)
}
