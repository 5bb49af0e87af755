package sizes

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

func TestProduct(t *testing.T) {
	for _, tc := range []struct {
		factors []int64
		want    int64
		ok      bool
	}{
		{nil, 1, true},
		{[]int64{0, math.MaxInt64}, 0, true},
		{[]int64{8192, 8192, 2}, 8192 * 8192 * 2, true},
		{[]int64{Max}, Max, true},
		{[]int64{Max, 1}, Max, true},
		{[]int64{Max + 1}, 0, false},
		{[]int64{1 << 31, 1 << 31, 4}, 0, false}, // 2^64: wraps to 0 in int64
		{[]int64{1 << 40, 1 << 22, 4}, 0, false}, // 2^64 too
		{[]int64{1 << 39, 1 << 23, 2}, 0, false}, // 2^63: negative in int64
		{[]int64{math.MaxInt64, math.MaxInt64}, 0, false},
		{[]int64{-1, 4}, 0, false},
		{[]int64{4, -1}, 0, false},
	} {
		got, ok := Product(tc.factors...)
		require.Equal(t, tc.ok, ok, "%v", tc.factors)
		require.Equal(t, tc.want, got, "%v", tc.factors)
	}
}

func TestBytes(t *testing.T) {
	n, err := Bytes("x", 3, 5)
	require.NoError(t, err)
	require.EqualValues(t, 15, n)
	_, err = Bytes("rs2d: MaxM × N × element size", 1<<31, 1<<31, 4)
	require.True(t, errors.Is(err, hcerr.ErrInvalidArgument))
	require.ErrorContains(t, err, "rs2d: MaxM × N × element size: 2147483648 × 2147483648 × 4 bytes exceeds 2^50")
	_, err = Bytes("y", -2, 3)
	require.ErrorContains(t, err, "negative")
}

func TestSum(t *testing.T) {
	s, ok := Sum(Max-1, 1)
	require.True(t, ok)
	require.Equal(t, Max, s)
	for _, c := range [][2]int64{{Max, 1}, {-1, 0}, {math.MaxInt64, math.MaxInt64}} {
		_, ok := Sum(c[0], c[1])
		require.False(t, ok, "%v", c)
	}
}
