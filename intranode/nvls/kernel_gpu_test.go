package nvls_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
)

// The NVLS kernels compile with NVRTC for sm_90 and, on a Hopper GPU, load
// into a module with every entry point found. Nothing here creates,
// imports, binds or maps a multicast object, and no kernel is launched:
// this is the only check of the NVLS engine that runs on the lent GPU
// machines (DESIGN.md's safety rule).
func TestNVLSKernelsCompileOnGPU(t *testing.T) {
	cubin, log, err := cuda.CompileOnly(nvls.Module, "sm_90")
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no NVRTC: %v", err)
	}
	require.NoError(t, err, "NVRTC log:\n%s", log)
	require.NotEmpty(t, cubin)
	if log != "" {
		t.Logf("NVRTC log:\n%s", log)
	}

	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("compiled for sm_90 (%d bytes of CUBIN); no CUDA device to load it on: %v", len(cubin), err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	if d.Arch() != "sm_90" {
		t.Skipf("compiled for sm_90; this device is %s, not Hopper", d.Arch())
	}
	for _, k := range nvls.Kernels() {
		res, err := d.Resources(k) // compiles for the device, loads the module, finds k
		require.NoError(t, err, k.Name)
		t.Logf("%s: %d registers, %d bytes of local memory", k.Name, res.Registers, res.LocalBytes)
		require.Zero(t, res.LocalBytes, "%s spills to local memory", k.Name)
	}
	require.Equal(t, 1, d.Live().Modules, "one module holds every NVLS kernel")
}
