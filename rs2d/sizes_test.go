package rs2d_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// Shapes whose MaxM × N × element size does not fit: each is refused by New
// with an invalid-argument error naming the product, before anything is
// allocated (the products wrap to 0 or a negative int64: a context that
// "succeeded" holding nothing, or a panic in the symmetric layout).
func TestNewRefusesSizesThatOverflow(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	w, err := world.Sim(shape, world.SimOptions{})
	require.NoError(t, err)
	defer w.Close()
	before := sim.Live()
	ctx := testContext(t)
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		for _, cfg := range []rs2d.Config{
			{MaxM: 1 << 31, N: 1 << 31, DType: dtype.F32},  // 2^64 bytes: wraps to 0
			{MaxM: 1 << 40, N: 1 << 22, DType: dtype.F32},  // 2^64 too
			{MaxM: 1 << 39, N: 1 << 23, DType: dtype.BF16}, // 2^63: negative
			{MaxM: 1 << 26, N: 1 << 24, DType: dtype.F32},  // 2^52: fits int64, not a device
			{MaxM: math.MaxInt - 1, N: math.MaxInt, DType: dtype.I32},
		} {
			rs, err := rs2d.New(ctx, r.Comm, r.Dev, cfg)
			if err == nil {
				_ = rs.Close()
				return fmt.Errorf("New(MaxM=%d, N=%d, %v) succeeded", cfg.MaxM, cfg.N, cfg.DType)
			}
			if !errors.Is(err, device.ErrInvalidArgument) {
				return fmt.Errorf("New(MaxM=%d, N=%d, %v) = %v, want an invalid-argument error", cfg.MaxM, cfg.N, cfg.DType, err)
			}
			require.ErrorContains(t, err, "MaxM × N × element size")
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, before, sim.Live(), "nothing was allocated")
}

// Tensor.Bytes never wraps around: a size that does not fit saturates, so a
// range check against an allocation refuses it.
func TestTensorBytesSaturates(t *testing.T) {
	require.EqualValues(t, 6*4*2, rs2d.Tensor{Rows: 6, Cols: 4, DType: dtype.BF16}.Bytes())
	for _, tc := range []rs2d.Tensor{
		{Rows: 1 << 31, Cols: 1 << 31, DType: dtype.F32},
		{Rows: 1 << 39, Cols: 1 << 23, DType: dtype.BF16},
		{Rows: math.MaxInt, Cols: 3, DType: dtype.I32},
	} {
		require.Equal(t, int64(math.MaxInt64), tc.Bytes(), "%v", tc)
	}
}
