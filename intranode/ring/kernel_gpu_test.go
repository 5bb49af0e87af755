package ring_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode/ring"
)

// On a GPU, the ring kernel of every dtype compiles (NVRTC), loads, and
// fits its launch bounds: one block of RingBlock threads per channel, with
// no spills to local memory.
func TestRingCompilesAndLoadsOnGPU(t *testing.T) {
	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for _, dt := range dtype.All {
		require.NoError(t, ring.Prepare(d, dt), dt.String())
		k := &device.Kernel{Module: ring.Module, Name: "hc_ring_" + dt.String(), Block: ring.Block}
		res, err := d.Resources(k)
		require.NoError(t, err, k.Name)
		t.Logf("%s: %d registers, %d bytes of local memory", k.Name, res.Registers, res.LocalBytes)
		require.Zero(t, res.LocalBytes, "%s spills to local memory", k.Name)
	}
}
