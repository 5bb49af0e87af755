package kernels_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// bulkCopies checks LaunchBulkCopy on dev: random bytes copied exactly, at
// sizes below one piece, of several pieces with a short last one and of
// more pieces than blocks, on 1 to 132 blocks, nothing written past the
// end; then a size or address not a multiple of 16 refused before any work.
func bulkCopies(t *testing.T, dev device.Device) {
	ctx := context.Background()
	s, err := dev.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	rng := kerneltest.NewRNG(t)
	const guard = 64
	for _, n := range []int64{16, 4096, 3*32<<10 + 48, 5 << 20} {
		for _, grid := range []int{1, 3, 132} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.IntN(256))
			}
			src, dst := alloc(t, dev, data), alloc(t, dev, make([]byte, n+guard))
			require.NoError(t, kernels.LaunchBulkCopy(dev, s, grid, dst, src, n))
			require.NoError(t, s.Synchronize(ctx))
			got := make([]byte, n+guard)
			require.NoError(t, dev.CopyToHost(got, dst))
			require.Equal(t, data, got[:n], "%d bytes on %d blocks", n, grid)
			require.Equal(t, make([]byte, guard), got[n:], "written past %d bytes", n)
		}
	}
	buf := alloc(t, dev, make([]byte, 256))
	for _, c := range []struct {
		dst, src device.Ptr
		n        int64
	}{{buf, buf.Add(128), 24}, {buf.Add(8), buf.Add(128), 32}, {buf, buf.Add(136), 32}} {
		require.ErrorIs(t, kernels.LaunchBulkCopy(dev, s, 1, c.dst, c.src, c.n), device.ErrInvalidArgument)
	}
}

func alloc(t *testing.T, dev device.Device, data []byte) device.Ptr {
	p, err := dev.Alloc(int64(len(data)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
	require.NoError(t, dev.CopyToDevice(p, data))
	return p
}

func TestBulkCopyOnSim(t *testing.T) {
	d, _, _ := kerneltest.SimDevice(t)
	bulkCopies(t, d)
}

// On a Hopper GPU the bulk copy compiles, loads with its shared memory and
// copies exactly.
func TestBulkCopyOnGPU(t *testing.T) {
	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) }) // after the buffers' frees, registered later
	if d.Arch() != "sm_90" {
		t.Skipf("the bulk copy is for sm_90 (Hopper); this device is %s", d.Arch())
	}
	bulkCopies(t, d)
}
