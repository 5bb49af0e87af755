package main

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// hc_rs2d_create with shapes whose byte size does not fit: each dimension is
// in range, their product is not. Each is HC_ERR_INVALID, allocates nothing,
// and the world still closes.
func TestCreateRefusesSizesThatOverflow(t *testing.T) {
	hs := simRanks(t, 1, 1)
	before := sim.Live()
	for _, c := range []struct {
		maxM, n int64
		dt      int
	}{
		{1 << 31, 1 << 31, 3}, // f32: 2^64 bytes, 0 once wrapped
		{1 << 40, 1 << 22, 3}, // 2^64 too
		{1 << 39, 1 << 23, 1}, // bf16: 2^63, negative once wrapped
		{1 << 40, 1 << 40, 4},
	} {
		_, err := createRS2D(hs[0], c.maxM, c.n, c.dt, 0, 0)
		require.Equal(t, codeInvalid, codeOf(err), "create(%d, %d, %d): %v", c.maxM, c.n, c.dt, err)
		require.ErrorContains(t, err, "MaxM × N × element size")
	}
	require.Equal(t, before, sim.Live())
}

// A panic inside create (the ABI's guard recovers it) must not leave the
// world counting a context that was never made: the world still closes.
func TestPanicInCreateLeavesNoContext(t *testing.T) {
	hs, err := initSim(1, 1)
	require.NoError(t, err)
	saved := newRS2D
	newRS2D = func(context.Context, bootstrap.Comm, device.Device, rs2d.Config) (*rs2d.Context, error) {
		panic("injected")
	}
	defer func() { newRS2D = saved }()
	func() {
		defer func() { require.Equal(t, "injected", recover()) }()
		_, _ = createRS2D(hs[0], 8, 8, 1, 0, 0)
	}()
	require.NoError(t, closeWorld(hs[0]), "the world closes after a create that panicked")
}

// hc_sim_alloc of more than the simulated memory, or of what is left of it,
// and copies at addresses far past an allocation: clear errors, no crash
// (1<<36 bytes killed the process; INT64_MAX and a negative offset were
// HC_ERR_OTHER with a Go stack trace).
func TestSimAllocAndCopyLimits(t *testing.T) {
	hs := simRanks(t, 1, 1)
	h := hs[0]
	_, err := allocMem(h, math.MaxInt64)
	require.Equal(t, codeInvalid, codeOf(err), "%v", err)
	require.ErrorContains(t, err, sim.EnvMemory)

	defer sim.SetMemoryLimit(sim.SetMemoryLimit(sim.MemoryInUse() + 1<<20))
	_, err = allocMem(h, 1<<36)
	require.Equal(t, codeInvalid, codeOf(err), "%v", err)
	p, err := allocMem(h, 768<<10)
	require.NoError(t, err)
	_, err = allocMem(h, 768<<10)
	require.Equal(t, codeOther, codeOf(err))
	require.ErrorContains(t, err, "out of memory")
	require.NotContains(t, err.Error(), "goroutine", "no stack trace")

	buf := make([]byte, 64)
	for _, dst := range []uint64{p - 8, p + 1<<63, p + 768<<10 - 32, math.MaxUint64 - 7} {
		err := copyToDevice(h, dst, buf)
		require.Equal(t, codeInvalid, codeOf(err), "copy to 0x%x: %v", dst, err)
		err = copyToHost(h, buf, dst)
		require.Equal(t, codeInvalid, codeOf(err), "copy from 0x%x: %v", dst, err)
	}
	require.NoError(t, freeMem(h, p))
}
