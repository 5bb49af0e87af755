package intranode_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// Each rank sends to lr+1, lr+2, ... and last to itself: at every position
// of the order, every rank sends to a different peer.
func TestRankSwizzle(t *testing.T) {
	require.Equal(t, []int{2, 3, 0, 1}, intranode.RankSwizzle(1, 4))
	require.Equal(t, []int{0}, intranode.RankSwizzle(0, 1))
	const lws = 5
	for i := 0; i < lws; i++ {
		seen := map[int]bool{}
		for lr := 0; lr < lws; lr++ {
			seen[intranode.RankSwizzle(lr, lws)[i]] = true
		}
		require.Len(t, seen, lws, "position %d", i)
	}
}

// Chunks cover the rows in order, none past the end.
func TestChunkRows(t *testing.T) {
	for _, c := range []struct{ rows, chunks int }{{7, 3}, {1, 4}, {8, 8}, {0, 2}} {
		next := 0
		for i := 0; i < c.chunks; i++ {
			r0, r1 := intranode.ChunkRows(c.rows, c.chunks, i)
			require.Equal(t, next, r0, "%+v chunk %d", c, i)
			require.LessOrEqual(t, r1, c.rows)
			next = r1
		}
		require.Equal(t, c.rows, next, "%+v", c)
	}
}

// The GEMM signals lay out a word per destination and segment plus an
// early word per destination; the early rows are half a block when split
// and the rank has node peers.
func TestGemmSignalsLayout(t *testing.T) {
	place := symm.Place{Shape: bootstrap.Shape{Nodes: 2, LocalSize: 2}}
	var l symm.Layout
	g := intranode.NewGemmSignals(&l, place, 3, true)
	regions := l.Regions()
	require.Len(t, regions, 2)
	require.EqualValues(t, 4*4*3, regions[0].Size)
	require.EqualValues(t, 4*4, regions[1].Size)
	require.Equal(t, 3, g.Segments())
	require.Equal(t, 5, g.EarlyRows(10))
	require.Zero(t, intranode.NewGemmSignals(&l, place, 0, false).EarlyRows(10))
	require.Equal(t, 1, intranode.NewGemmSignals(&l, place, 0, false).Segments())
	one := symm.Place{Shape: bootstrap.Shape{Nodes: 2, LocalSize: 1}}
	require.Zero(t, intranode.NewGemmSignals(&l, one, 1, true).EarlyRows(10), "no node peers")
}
