package rs2d_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// A caller matches rs2d's errors with rs2d's sentinels, the same as
// device's.
func TestSentinelsAreReExported(t *testing.T) {
	_, err := rs2d.MemoryOf(rs2d.Config{MaxM: 0, N: 4, DType: dtype.F32}, bootstrap.Shape{Nodes: 1, LocalSize: 2}, 0)
	require.ErrorIs(t, err, rs2d.ErrInvalidArgument)
	for _, pair := range [][2]error{
		{rs2d.ErrNotSupported, device.ErrNotSupported},
		{rs2d.ErrInvalidArgument, device.ErrInvalidArgument},
		{rs2d.ErrTimeout, device.ErrTimeout},
		{rs2d.ErrPeer, device.ErrPeer},
		{rs2d.ErrClosed, device.ErrClosed},
	} {
		require.ErrorIs(t, pair[0], pair[1])
	}
	require.ErrorIs(t, (&rs2d.StallError{Calls: []uint64{1, 0}}), rs2d.ErrPeer)
}
