package floors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

// The defaults are sized for the backend: the CPU moves 16 MiB per
// transfer, one GEMM row beside a GEMM (the GEMMs run in Go); negative
// sizes are refused.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		in           Options
		gpu          bool
		bytes, iters int64
	}{
		{Options{}, true, 512 << 20, 10},
		{Options{BesideGemm: true}, true, 512 << 20, 10},
		{Options{}, false, 16 << 20, 10},
		{Options{BesideGemm: true}, false, 16 << 10, 2},
		{Options{BesideGemm: true, Bytes: 1 << 20, Iters: 3}, false, 1 << 20, 3},
		{Options{BesideGemm: true, GemmN: 64}, false, 128, 2},
	} {
		o, err := tc.in.withDefaults(tc.gpu)
		require.NoError(t, err)
		require.Equal(t, tc.bytes, o.Bytes, "%+v gpu=%v", tc.in, tc.gpu)
		require.EqualValues(t, tc.iters, o.Iters, "%+v gpu=%v", tc.in, tc.gpu)
	}
	for _, o := range []Options{{Bytes: -1}, {Iters: -3}, {GemmN: -8}, {GemmK: -2}} {
		_, err := o.withDefaults(false)
		require.ErrorIs(t, err, device.ErrInvalidArgument)
	}
}
