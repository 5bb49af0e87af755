package gemm_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/gemm"
)

// On a Hopper GPU, every variant of the GEMM compiles (NVRTC, sm_90a),
// loads with its dynamic shared memory, and keeps its accumulators in
// registers: no local memory (spills would mean the register budget of
// setmaxnreg did not hold).
func TestGemmCompilesAndLoadsOnGPU(t *testing.T) {
	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	if d.Arch() != "sm_90" {
		t.Skipf("the GEMM is for sm_90 (Hopper); this device is %s", d.Arch())
	}
	for _, k := range gemm.Kernels() {
		res, err := d.Resources(k)
		require.NoError(t, err, k.Name)
		t.Logf("%s: %d registers, %d bytes of local memory, %d bytes of dynamic shared memory", k.Name, res.Registers, res.LocalBytes, k.Shared)
		require.Zero(t, res.LocalBytes, "%s spills to local memory", k.Name)
	}
}
