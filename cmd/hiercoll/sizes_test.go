package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/sizes"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1, 4k,64M,2G")
	require.NoError(t, err)
	require.Equal(t, []int64{1, 4 << 10, 64 << 20, 2 << 30}, got)

	got, err = parseSizes("1048576G")
	require.NoError(t, err)
	require.Equal(t, []int64{sizes.Max}, got, "1 PiB is the largest size")

	// Sizes whose product with the suffix wraps around int64 (to 0, to a
	// small size, to a negative one) or passes 1 PiB are refused.
	for _, bad := range []string{"17179869184G", "18014398509481985K", "8589934592G", "1048577G", "1125899906842625",
		"0", "-1M", "1X", "", "M", "9223372036854775808"} {
		v, err := parseSizes(bad)
		require.Error(t, err, "%q gave %v", bad, v)
	}
}

// The error quotes a long flag value cut short.
func TestParseSizesQuotesShort(t *testing.T) {
	_, err := parseSizes(strings.Repeat("9", 1<<20) + "G")
	require.Error(t, err)
	require.Less(t, len(err.Error()), 256)
}

// FuzzParseSizes: whatever the text, a size that parses is in [1, sizes.Max],
// and one field gives one size.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"1M", "64M,2G", "17179869184G", "18014398509481985K", "8589934592G", "1048576G", "4k", " 2 g", "-1", "1X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSizes(s)
		if err != nil {
			require.Less(t, len(err.Error()), 512, "error quotes the input cut short")
			return
		}
		require.Len(t, got, strings.Count(s, ",")+1)
		for _, v := range got {
			require.True(t, v >= 1 && v <= sizes.Max, "%q gave %d", s, v)
		}
	})
}
