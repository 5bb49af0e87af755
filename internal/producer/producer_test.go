package producer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/producer"
)

// SegmentsFor: about one segment per 1024 rows of a destination, at most 8;
// on a node of two ranks (where the GEMM sums the own block and its storer
// waits for the peer's rows of each segment) at least two where a block
// holds two row tiles.
func TestSegmentsFor(t *testing.T) {
	for _, tc := range []struct {
		rows  int
		pairs bool // one node of two ranks, else two nodes of two
		want  int
	}{
		{64, false, 1}, {64, true, 1},
		{128, true, 1}, {255, true, 1}, {256, true, 2},
		{1024, false, 1}, {1024, true, 2},
		{2048, false, 2}, {2048, true, 2},
		{4096, true, 4}, {8192, false, 8}, {1 << 20, true, 8},
	} {
		t.Run(fmt.Sprintf("rows%d/pairs%v", tc.rows, tc.pairs), func(t *testing.T) {
			nodes := 2
			if tc.pairs {
				nodes = 1
			}
			require.Equal(t, tc.want, producer.SegmentsFor(tc.rows, nodes, 2))
		})
	}
}
