package intranode_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ce"
	"github.com/seed12530e24/hiercoll/intranode/push"
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

// The engines that cut their node steps: what is asked, within what the
// engine can cut (the SM engine elements, up to MaxChunks; the copy engine
// whole rows); by size, one chunk per 4 MiB of the block, at least one, at
// most MaxChunks or eight.
func TestChunkers(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		engine      intranode.Chunker
		asked, rows int
		rowBytes    int64
		want        int
	}{
		{"sm/1 MiB", &push.Engine{}, 0, 1, mib, 1},
		{"sm/16 MiB", &push.Engine{}, 0, 16, mib, 4},
		{"sm/1 GiB", &push.Engine{}, 0, 1024, mib, push.MaxChunks},
		{"sm/asked, one row", &push.Engine{}, 3, 1, mib, 3},
		{"sm/asked, too many", &push.Engine{}, push.MaxChunks + 5, 64, mib, push.MaxChunks},
		{"copy/1 MiB", &ce.Engine{}, 0, 1, mib, 1},
		{"copy/16 MiB", &ce.Engine{}, 0, 16, mib, 4},
		{"copy/1 GiB", &ce.Engine{}, 0, 1024, mib, 8},
		{"copy/two rows of 64 MiB", &ce.Engine{}, 0, 2, 64 * mib, 2},
		{"copy/asked", &ce.Engine{}, 3, 10, mib, 3},
		{"copy/asked, two rows", &ce.Engine{}, 5, 2, mib, 2},
	} {
		require.Equal(t, c.want, c.engine.Chunks(c.asked, c.rows, c.rowBytes), c.name)
	}
}

// A block is cut into as few rounds as hold it, none above the bound: even
// ones (one row apart at most), or whole rounds and the rest last after a
// first round of a quarter of the bound (or more, where the count needs
// it) when asked for.
func TestRoundRows(t *testing.T) {
	for _, c := range []struct {
		rpr, per   int
		shortFirst bool
		want       []int
	}{
		{10, 10, true, []int{10}},
		{10, 4, false, []int{4, 3, 3}},
		{4096, 1365, false, []int{1024, 1024, 1024, 1024}},
		{65536, 1365, false, append(slices.Repeat([]int{1338}, 23), slices.Repeat([]int{1337}, 26)...)},
		{8192, 4095, true, []int{1024, 4095, 3073}},
		{10, 4, true, []int{2, 4, 4}},
		{5, 4, true, []int{1, 4}},
		{8, 4, true, []int{4, 4}}, // the bound divides the block: no room for a short first round
		{3, 1, true, []int{1, 1, 1}},
	} {
		got := intranode.RoundRows(c.rpr, c.per, c.shortFirst)
		require.Equal(t, c.want, got, "%d rows in rounds of at most %d, short first %v", c.rpr, c.per, c.shortFirst)
	}
	for rpr := 1; rpr <= 70; rpr++ {
		for per := 1; per <= rpr; per++ {
			for _, shortFirst := range []bool{false, true} {
				rows := intranode.RoundRows(rpr, per, shortFirst)
				sum := 0
				for _, r := range rows {
					require.True(t, r >= 1 && r <= per, fmt.Sprintf("%d rows, at most %d: %v", rpr, per, rows))
					sum += r
				}
				require.Equal(t, rpr, sum)
				require.Len(t, rows, (rpr+per-1)/per)
				if !shortFirst {
					require.LessOrEqual(t, slices.Max(rows)-slices.Min(rows), 1, "even rounds: %v", rows)
				}
			}
		}
	}
}
