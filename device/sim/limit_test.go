package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

// The simulated memory has a cap: an allocation larger than the cap is an
// invalid argument, one larger than what is left is out of memory, and
// freeing gives the bytes back. Before the cap, a huge allocation killed
// the process (the Go runtime out of memory) or panicked in make.
func TestMemoryCap(t *testing.T) {
	defer SetMemoryLimit(SetMemoryLimit(1 << 20))
	d := newDevice(t, NewHost("cap"), 0, Options{})
	base := MemoryInUse()

	_, err := d.Alloc(2 << 20)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, EnvMemory)
	for _, size := range []int64{math.MaxInt64, 1 << 36} {
		_, err := d.Alloc(size)
		require.ErrorIs(t, err, device.ErrInvalidArgument, "%d bytes", size)
	}

	a, err := d.Alloc(600 << 10)
	require.NoError(t, err)
	require.Equal(t, base+600<<10, MemoryInUse())
	require.Equal(t, int64(600<<10), d.MemoryInUse())
	_, err = d.Alloc(600 << 10)
	require.ErrorContains(t, err, "out of memory")
	require.False(t, errors.Is(err, device.ErrInvalidArgument), "it would fit an empty device")

	// A peer view keeps the bytes until it is closed.
	h, err := d.ExportMem(a)
	require.NoError(t, err)
	view, err := d.OpenPeer(h)
	require.NoError(t, err)
	require.NoError(t, d.Free(a))
	require.Equal(t, base+600<<10, MemoryInUse())
	require.Zero(t, d.MemoryInUse(), "the device's own allocation is freed; the view is its peer's")
	require.NoError(t, d.ClosePeer(view))
	require.Equal(t, base, MemoryInUse())
	b, err := d.Alloc(600 << 10)
	require.NoError(t, err)
	require.NoError(t, d.Free(b))
}

// The cap comes from EnvMemory when no program set one; a value that does
// not parse is refused, naming the variable.
func TestMemoryCapFromEnvironment(t *testing.T) {
	defer SetMemoryLimit(SetMemoryLimit(0))
	d := newDevice(t, NewHost("env"), 0, Options{})
	t.Setenv(EnvMemory, "64K")
	_, err := d.Alloc(65<<10 + MemoryInUse())
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, "65536 bytes")
	t.Setenv(EnvMemory, "lots")
	_, err = d.Alloc(256)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, EnvMemory+`="lots"`)
	for s, want := range map[string]int64{"1024": 1024, "2k": 2048, "3M": 3 << 20, "1G": 1 << 30, "2T": 2 << 40} {
		got, err := parseBytes(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "0", "-1M", "1.5G", "9999999999T"} {
		_, err := parseBytes(s)
		require.Error(t, err, s)
	}
}

// An address far past an allocation (a negative offset added to a device
// pointer) is refused, not turned into a negative slice index.
func TestAddressFarPastAnAllocation(t *testing.T) {
	d := newDevice(t, NewHost("far"), 0, Options{})
	p, err := d.Alloc(256)
	require.NoError(t, err)
	defer d.Free(p)
	buf := make([]byte, 16)
	for _, addr := range []device.Ptr{
		p + 1<<63, p + 1<<63 + 8, device.Ptr(math.MaxUint64 - 7), p.Add(-8), p + 256, p + 250,
	} {
		require.ErrorIs(t, d.CopyToDevice(addr, buf), device.ErrInvalidArgument, "to %v", addr)
		require.ErrorIs(t, d.CopyToHost(buf, addr), device.ErrInvalidArgument, "from %v", addr)
	}
	base, size, err := d.AddressRange(p + 256)
	require.NoError(t, err, "one past the end is still the allocation's range")
	require.Equal(t, p, base)
	require.EqualValues(t, 256, size)
	_, _, err = d.AddressRange(p + 1<<63)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
}
