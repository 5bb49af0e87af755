package producer_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/internal/producer"
)

// HelpRows, at the shapes it was measured on (4 and 2 H200s, RESULTS.md
// 2026-11-26): about half of the last block at 8192³ in bf16 on 4 GPUs, all
// of it in fp8, nothing where the copies landed before the GEMM ended; a
// percentage asked for is taken as it is, a negative one is none.
func TestHelpRows(t *testing.T) {
	spec := func(m, k int, dt dtype.DType) gemm.Params {
		g := gemm.Params{GemmSpec: device.GemmSpec{M: m, N: 8192, K: k, DType: dt}, Out: dtype.BF16}
		return g
	}
	bf16, fp8 := dtype.BF16, dtype.E4M3
	half := producer.HelpRows(spec(8192, 2048, bf16), 4, 2, 0)
	require.InDelta(t, 1024, half, 205, "8192³ bf16 on 4 GPUs: about half of 2048 rows")
	require.Equal(t, 2048, producer.HelpRows(spec(8192, 2048, fp8), 4, 2, 0), "8192³ fp8 on 4 GPUs: all of it")
	for _, tc := range []struct {
		m, k, world, segs int
		dt                dtype.DType
	}{
		{8192, 7168, 4, 2, bf16}, {8192, 7168, 4, 2, fp8}, {4096, 7168, 4, 1, bf16}, {4096, 7168, 4, 1, fp8},
		{8192, 4096, 2, 4, bf16}, {8192, 4096, 2, 4, fp8}, {8192, 14336, 2, 4, fp8},
	} {
		require.Zero(t, producer.HelpRows(spec(tc.m, tc.k, tc.dt), tc.world, tc.segs, 0), "%+v", tc)
	}
	require.Equal(t, 614, producer.HelpRows(spec(8192, 7168, bf16), 4, 2, 30))
	require.Zero(t, producer.HelpRows(spec(8192, 2048, fp8), 4, 2, -1))
	require.Zero(t, producer.HelpRows(spec(8192, 2048, fp8), 1, 2, 0))
}
