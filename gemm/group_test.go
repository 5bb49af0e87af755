package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// segmentsApart reports whether, in the walk of rowTiles row tiles (the
// identity order) by group, every segment of segTiles row tiles has its
// tiles next to each other: no tile of another segment comes between a
// segment's first tile and its last, so each segment's signal is raised as
// soon as the walk is through it.
func segmentsApart(rowTiles, colTiles, segTiles, group int) bool {
	first, last := map[int]int{}, map[int]int{}
	for t := 0; t < rowTiles*colTiles; t++ {
		rt, _ := gemmTile(t, nil, rowTiles, colTiles, group)
		s := rt / segTiles
		if _, ok := first[s]; !ok {
			first[s] = t
		}
		last[s] = t
	}
	for s := range first {
		if last[s]-first[s]+1 != segTiles*colTiles {
			return false
		}
	}
	return true
}

func TestGroupForKeepsSegmentsApart(t *testing.T) {
	// The default group mixes segments of 4 row tiles (what 512 rows per
	// destination had): the property can fail.
	require.False(t, segmentsApart(16, 5, 4, DefaultGroup))
	for segTiles := 1; segTiles <= 40; segTiles++ {
		g := GroupFor(segTiles * TileM)
		require.GreaterOrEqual(t, g, 1)
		require.LessOrEqual(t, g, DefaultGroup)
		for _, colTiles := range []int{1, 3, 32} {
			require.True(t, segmentsApart(4*segTiles, colTiles, segTiles, g), "segments of %d row tiles, group %d", segTiles, g)
		}
	}
	// Whole groups of the default where segments allow them, the largest
	// divisor otherwise; rows short of a tile count as one.
	for rows, want := range map[int]int{64: 1, 128: 1, 512: 4, 768: 6, 1024: 8, 1280: 5, 1408: 1, 2048: 8, 3072: 8, 1536: 6} {
		require.Equal(t, want, GroupFor(rows), "%d rows", rows)
	}
}
