package nvshmem

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// The constants are NVSHMEM's (nvshmem_types.h, nvshmem_constants.h,
// nvshmemx_api.h of NVSHMEM 3.4).
func TestConstants(t *testing.T) {
	require.Equal(t, SignalOp(9), SignalSet)
	require.Equal(t, SignalOp(10), SignalAdd)
	require.Equal(t, []Cmp{0, 1, 2, 3, 4, 5}, []Cmp{CmpEQ, CmpNE, CmpGT, CmpLE, CmpLT, CmpGE})
	require.Equal(t, []Team{0, 1, 2, 3}, []Team{TeamWorld, TeamShared, TeamNode, TeamSameMyPENode})
	require.Equal(t, 8, initWithUniqueID)
	require.Equal(t, 131216, initAttrVersion) // (2<<16) + 144
	require.Equal(t, 131200, initArgsVersion) // (2<<16) + 128
	require.Equal(t, 65560, uidArgsVersion)   // (1<<16) + 24
	require.Equal(t, 65664, uniqueIDVersion)  // (1<<16) + 128
	require.Equal(t, 128, initArgsSize)
	require.Equal(t, initAttrSize, offArgs+initArgsSize)
	require.Equal(t, initAttrSize, offArgsReserved+92, "92 reserved bytes end the struct")
	require.Equal(t, "==", CmpEQ.String())
	require.Equal(t, "NVSHMEM_SIGNAL_ADD", SignalAdd.String())
}

// TestPackInitAttr checks the attribute byte for byte against the layout in
// FACTS.md, written out by hand.
func TestPackInitAttr(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the expected bytes below are little-endian")
	}
	got := packInitAttr(3, 8, 5, 0x1122334455667788)
	var want [initAttrSize]byte
	copy(want[0:], []byte{0x90, 0x00, 0x02, 0x00})                          // version (2<<16)+144 = 0x20090
	copy(want[8:], make([]byte, 8))                                         // mpi_comm NULL
	copy(want[16:], []byte{0x80, 0x00, 0x02, 0x00})                         // args.version (2<<16)+128 = 0x20080
	copy(want[24:], []byte{0x18, 0x00, 0x01, 0x00})                         // uid_args.version (1<<16)+24 = 0x10018
	copy(want[32:], []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}) // uid_args.id
	copy(want[40:], []byte{3, 0, 0, 0})                                     // myrank
	copy(want[44:], []byte{8, 0, 0, 0})                                     // nranks
	copy(want[48:], []byte{5, 0, 0, 0})                                     // cuda_device_id
	require.Equal(t, want, got)
	for i := 52; i < initAttrSize; i++ {
		require.Zero(t, got[i], "reserved byte %d", i)
	}
	for i := 4; i < 8; i++ {
		require.Zero(t, got[i], "padding after version, byte %d", i)
	}

	current := packInitAttr(0, 1, -1, 0)
	require.Equal(t, []byte{0xff, 0xff, 0xff, 0xff}, current[48:52], "-1: the current device")
}

func TestNVSHMEMBool(t *testing.T) {
	for v, want := range map[string]bool{
		"1": true, "true": true, "yes": true, "on": true, "": true, "2": true,
		"0": false, "n": false, "No": false, "false": false, "F": false, "off": true,
	} {
		require.Equal(t, want, nvshmemBool(v), "%q", v)
	}
}

// NVSHMEM_DISABLE_NVLS is set to 1 when unset; a set value is kept only
// where NVSHMEM reads it as true (nvshmemBool, above; dl.SafeEnv does the
// rest, tested there).
func TestNVLSOff(t *testing.T) {
	require.Equal(t, "NVSHMEM_DISABLE_NVLS", nvlsOff.Name)
	require.Equal(t, "1", nvlsOff.Off)
	require.True(t, nvlsOff.Safe(nvlsOff.Off))
	for v, safe := range map[string]bool{"1": true, "true": true, "": true, "0": false, "false": false, "no": false} {
		require.Equal(t, safe, nvlsOff.Safe(v), "%q", v)
	}
}

func TestPluginEnv(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	set := func(k, v string) error { env[k] = v; return nil }

	p, err := pluginEnv(dir, lookup, set)
	require.NoError(t, err)
	require.Empty(t, p, "no plugin beside the library: nothing set")
	require.Empty(t, env)

	plugin := filepath.Join(dir, uidPlugin)
	require.NoError(t, os.WriteFile(plugin, nil, 0o644))
	p, err = pluginEnv(dir, lookup, set)
	require.NoError(t, err)
	require.Equal(t, plugin, p)
	require.Equal(t, map[string]string{envUIDPlugin: plugin}, env)

	env[envUIDPlugin] = "/mine/nvshmem_bootstrap_uid.so.3"
	p, err = pluginEnv(dir, lookup, set)
	require.NoError(t, err)
	require.Empty(t, p, "a value the user set is kept")
	require.Equal(t, "/mine/nvshmem_bootstrap_uid.so.3", env[envUIDPlugin])

	p, err = pluginEnv("", lookup, set)
	require.NoError(t, err)
	require.Empty(t, p)
}

func TestCandidates(t *testing.T) {
	site := t.TempDir()
	wheel := filepath.Join(site, wheelPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(wheel), 0o755))
	require.NoError(t, os.WriteFile(wheel, nil, 0o644))
	t.Setenv("PYTHONPATH", site)
	t.Setenv(EnvLib, "/custom/libnvshmem_host.so.3")

	libs, searched := candidates()
	require.Equal(t, "/custom/libnvshmem_host.so.3", libs[0], "the override comes first")
	require.Equal(t, "libnvshmem_host.so.3", libs[1], "then the loader's search path")
	require.Contains(t, libs, wheel)
	require.Equal(t, filepath.Clean(site), searched[0])
}

func TestErrors(t *testing.T) {
	e := &Error{Call: "nvshmemx_hostlib_init_attr", Code: 7}
	require.Contains(t, e.Error(), "nvshmemx_hostlib_init_attr")
	require.Contains(t, e.Error(), "NVSHMEMX_ERROR_INTERNAL")
	require.ErrorIs(t, &Error{Code: 1}, hcerr.ErrInvalidArgument)
	require.ErrorIs(t, &Error{Code: 3}, hcerr.ErrNotSupported)
	require.Contains(t, (&Error{Call: "x", Code: 99}).Error(), "unknown status")
	require.ErrorIs(t, &CUDAError{Call: "cuInit", Code: 100}, hcerr.ErrNotSupported)
	require.ErrorIs(t, &CUDAError{Call: "cuDeviceGet", Code: 101}, hcerr.ErrInvalidArgument)
}

// TestLoadMissing runs where NVSHMEM is absent (as on the build machines):
// Load must fail with ErrNotSupported and name what it tried.
func TestLoadMissing(t *testing.T) {
	t.Setenv(EnvLib, "/nonexistent/hiercoll-test/libnvshmem_host.so.3")
	t.Setenv(envDisableNVLS, "1")
	lib, err := Load()
	if err == nil {
		t.Skipf("NVSHMEM is installed here (%s): nothing to test", lib.Path())
	}
	require.True(t, errors.Is(err, hcerr.ErrNotSupported), "%v", err)
	require.ErrorContains(t, err, "/nonexistent/hiercoll-test/libnvshmem_host.so.3")
	require.ErrorContains(t, err, "libnvshmem_host.so.3")
	require.ErrorContains(t, err, EnvLib)
}

func TestLoadRefusesNVLS(t *testing.T) {
	t.Setenv(envDisableNVLS, "0")
	_, err := Load()
	require.ErrorIs(t, err, hcerr.ErrNotSupported)
	if !errors.Is(err, errNoCgo) {
		require.ErrorContains(t, err, envDisableNVLS)
	}
}
