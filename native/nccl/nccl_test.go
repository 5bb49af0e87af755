package nccl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

func TestTypeOf(t *testing.T) {
	for _, tc := range []struct {
		d    dtype.DType
		want DataType
		code int32
	}{
		{dtype.BF16, Bfloat16, 9},
		{dtype.F16, Float16, 6},
		{dtype.F32, Float32, 7},
		{dtype.I32, Int32, 2},
	} {
		got, err := TypeOf(tc.d)
		require.NoError(t, err, tc.d)
		require.Equal(t, tc.want, got, tc.d)
		require.Equal(t, tc.code, int32(got), tc.d)
	}
	for _, d := range dtype.All {
		_, err := TypeOf(d)
		require.NoError(t, err, "every hiercoll dtype maps to NCCL: %v", d)
	}
	_, err := TypeOf(dtype.Invalid)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Equal(t, "ncclBfloat16", Bfloat16.String())
	require.Equal(t, RedOp(0), Sum)
}

func TestDecodeVersion(t *testing.T) {
	for _, tc := range []struct{ code, major, minor, patch int }{
		{22803, 2, 28, 3},
		{22809, 2, 28, 9},
		{21003, 2, 10, 3},
		{2708, 2, 7, 8},
	} {
		ma, mi, pa := DecodeVersion(tc.code)
		require.Equal(t, []int{tc.major, tc.minor, tc.patch}, []int{ma, mi, pa}, tc.code)
	}
}

func TestErrorIs(t *testing.T) {
	e := &Error{Call: "ncclSend", Code: InvalidArgument, Text: "invalid argument", Detail: "peer 9 out of range"}
	require.ErrorIs(t, e, hcerr.ErrInvalidArgument)
	require.NotErrorIs(t, e, hcerr.ErrPeer)
	require.Contains(t, e.Error(), "ncclSend")
	require.Contains(t, e.Error(), "ncclInvalidArgument (4)")
	require.Contains(t, e.Error(), "peer 9 out of range")
	require.ErrorIs(t, &Error{Code: RemoteError}, hcerr.ErrPeer)
	require.ErrorIs(t, &Error{Code: Timeout}, hcerr.ErrTimeout)

	c := &CUDAError{Call: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE"}
	require.ErrorIs(t, c, hcerr.ErrNotSupported)
	require.Contains(t, c.Error(), "cuInit")
	require.ErrorIs(t, &CUDAError{Code: 101}, hcerr.ErrInvalidArgument)
}

// NCCL_NVLS_ENABLE is set to 0 when unset; a set value is kept only where
// NCCL's strtoll reads it as 0 (dl.SafeEnv does the rest, tested there).
func TestNVLSOff(t *testing.T) {
	require.Equal(t, "NCCL_NVLS_ENABLE", nvlsOff.Name)
	require.Equal(t, "0", nvlsOff.Off)
	for v, safe := range map[string]bool{
		"0": true, "0x0": true, " 0 ": true, "00": true,
		"1": false, "2": false, "off": false, "": false,
	} {
		require.Equal(t, safe, nvlsOff.Safe(v), "%q", v)
	}
}

func TestCandidates(t *testing.T) {
	site := t.TempDir()
	wheel := filepath.Join(site, wheelPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(wheel), 0o755))
	require.NoError(t, os.WriteFile(wheel, nil, 0o644))
	t.Setenv("PYTHONPATH", site)
	t.Setenv(EnvLib, "/custom/libnccl.so.2")

	libs, searched := candidates()
	require.GreaterOrEqual(t, len(libs), 3)
	require.Equal(t, "/custom/libnccl.so.2", libs[0], "the override comes first")
	require.Equal(t, "libnccl.so.2", libs[1], "then the loader's search path")
	require.Contains(t, libs, wheel)
	require.Equal(t, filepath.Clean(site), searched[0], "PYTHONPATH entries are searched first")
}

func TestSitePackagesGlobsVirtualEnv(t *testing.T) {
	venv := t.TempDir()
	sp := filepath.Join(venv, "lib", "python3.12", "site-packages")
	require.NoError(t, os.MkdirAll(sp, 0o755))
	t.Setenv("PYTHONPATH", "")
	t.Setenv("VIRTUAL_ENV", venv)
	dirs := SitePackages()
	require.NotEmpty(t, dirs)
	require.Equal(t, sp, dirs[0])
	seen := map[string]bool{}
	for _, d := range dirs {
		require.False(t, seen[d], "listed once: %s", d)
		seen[d] = true
	}
}

// TestLoadMissing runs where NCCL is absent (as on the build machines): Load
// must fail with ErrNotSupported and name what it tried.
func TestLoadMissing(t *testing.T) {
	t.Setenv(EnvLib, "/nonexistent/hiercoll-test/libnccl.so.2")
	t.Setenv(envNVLS, "0")
	lib, err := Load()
	if err == nil {
		t.Skipf("NCCL is installed here (%s): nothing to test", lib.Path())
	}
	require.True(t, errors.Is(err, hcerr.ErrNotSupported), "%v", err)
	require.ErrorContains(t, err, "/nonexistent/hiercoll-test/libnccl.so.2")
	require.ErrorContains(t, err, "libnccl.so.2")
	require.ErrorContains(t, err, EnvLib)
}

func TestLoadRefusesNVLS(t *testing.T) {
	t.Setenv(envNVLS, "1")
	_, err := Load()
	require.ErrorIs(t, err, hcerr.ErrNotSupported)
	if !errors.Is(err, errNoCgo) {
		require.ErrorContains(t, err, envNVLS)
	}
}
