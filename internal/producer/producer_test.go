package producer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/producer"
)

// SegmentsFor: about one segment per 1024 rows of a destination, at most 8;
// where the GEMM may sum the own block (one node of two ranks; of four from
// SumMinRows rows per rank) and its storer waits for the peers' rows of
// each segment, at least two where a block holds two row tiles.
func TestSegmentsFor(t *testing.T) {
	for _, tc := range []struct {
		rows       int
		nodes, lws int
		want       int
	}{
		{64, 2, 2, 1}, {64, 1, 2, 1},
		{128, 1, 2, 1}, {255, 1, 2, 1}, {256, 1, 2, 2},
		{1024, 2, 2, 1}, {1024, 1, 2, 2},
		{2048, 2, 2, 2}, {2048, 1, 2, 2},
		{4096, 1, 2, 4}, {8192, 2, 2, 8}, {1 << 20, 1, 2, 8},
		// Four ranks: the sum only from SumMinRows rows by default.
		{256, 1, 4, 1}, {producer.SumMinRows - 1, 1, 4, 1}, {producer.SumMinRows, 1, 4, 2}, {2048, 1, 4, 2},
		{producer.SumMinRows, 2, 4, 1},
	} {
		t.Run(fmt.Sprintf("rows%d/%dx%d", tc.rows, tc.nodes, tc.lws), func(t *testing.T) {
			require.Equal(t, tc.want, producer.SegmentsFor(tc.rows, tc.nodes, tc.lws))
		})
	}
}
