package device_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

func TestCmpHolds(t *testing.T) {
	cases := []struct {
		cmp  device.Cmp
		w, v uint32
		want bool
	}{
		{device.EQ, 7, 7, true},
		{device.EQ, 7, 8, false},
		{device.EQ, 0, 0xffffffff, false},
		{device.GEQ, 5, 5, true},
		{device.GEQ, 6, 5, true},
		{device.GEQ, 4, 5, false},
		// Cyclic, as cuStreamWaitValue32: (int32)(w-v) >= 0.
		{device.GEQ, 0x00000002, 0xfffffffe, true},
		{device.GEQ, 0xfffffffd, 0xfffffffe, false},
		{device.GEQ, 0x7fffffff, 0, true},
		{device.GEQ, 0x80000000, 0, false},
		{device.GEQ, 0, 0x80000001, true},
		{device.Cmp(9), 1, 1, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.cmp.Holds(c.w, c.v), "%#x %v %#x", c.w, c.cmp, c.v)
	}
	require.Equal(t, ">=", device.GEQ.String())
	require.Equal(t, "==", device.EQ.String())
	require.Equal(t, "cmp(9)", device.Cmp(9).String())
}

func TestPtr(t *testing.T) {
	p := device.Ptr(0x1000)
	require.Equal(t, device.Ptr(0x1010), p.Add(16))
	require.Equal(t, device.Ptr(0xff0), p.Add(-16))
	require.Equal(t, "0x1000", p.String())
}

func TestTimeoutError(t *testing.T) {
	wait := &device.TimeoutError{
		Stream: "sim:1 stream 2", Word: device.Word{Addr: 0xabc0, Label: "rail slot of rank 5"},
		Cmp: device.GEQ, Want: 9, Got: 8, After: 2 * time.Second,
	}
	require.Equal(t, "sim:1 stream 2: waited 2s for rail slot of rank 5 (word 0xabc0) to become >= 9; it holds 8", wait.Error())
	other := &device.TimeoutError{Stream: "s", What: "event synchronize", After: time.Millisecond}
	require.Equal(t, "s: event synchronize did not complete within 1ms", other.Error())
	for _, err := range []error{wait, other, fmt.Errorf("wrapped: %w", wait)} {
		require.ErrorIs(t, err, device.ErrTimeout)
		require.NotErrorIs(t, err, device.ErrPeer)
		var te *device.TimeoutError
		require.True(t, errors.As(err, &te))
	}
}

func TestCheckArgs(t *testing.T) {
	k := &device.Kernel{Name: "k"}
	require.NoError(t, device.CheckArgs(k, []any{device.Ptr(1), int32(-1), uint32(1), int64(-1), uint64(1), float32(0.5)}))
	require.NoError(t, device.CheckArgs(k, nil))
	for i, bad := range []any{int(1), int8(1), uint(1), uintptr(1), float64(1), "x", nil, []byte{1}, new(device.Ptr)} {
		err := device.CheckArgs(k, []any{int32(1), bad})
		require.ErrorIs(t, err, device.ErrInvalidArgument, "case %d: %T", i, bad)
		require.ErrorContains(t, err, "argument 1")
		require.ErrorContains(t, err, fmt.Sprintf("%T", bad))
		require.ErrorContains(t, err, "kernel k")
	}
}

// Ranges that touch do not meet; ranges that share a byte do, whatever
// their order; a size past the address space reaches its end.
func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		p    device.Ptr
		n    int64
		q    device.Ptr
		m    int64
		want bool
	}{
		{0x1000, 0x100, 0x1100, 0x100, false},
		{0x1100, 0x100, 0x1000, 0x100, false},
		{0x1000, 0x101, 0x1100, 0x100, true},
		{0x1100, 0x100, 0x1000, 0x101, true},
		{0x1000, 0, 0x1000, 0x100, false},
		{0x1080, 0x10, 0x1000, 0x100, true},
		{0xffff_ffff_ffff_f000, math.MaxInt64, 0xffff_ffff_ffff_fff0, 8, true},
	} {
		if got := device.Overlap(c.p, c.n, c.q, c.m); got != c.want {
			t.Errorf("Overlap(%v, %d, %v, %d) = %v, want %v", c.p, c.n, c.q, c.m, got, c.want)
		}
	}
}
