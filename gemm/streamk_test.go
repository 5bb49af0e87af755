package gemm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The stream-K schedule keeps its promises for every small grid, tile and
// k-tile count: each k tile of each tile is computed once; each tile has
// one final item, stored by one CTA; a CTA has at most one partial piece
// and computes it before its final one; and the CTAs the finisher gathers
// from are exactly those holding a partial piece of its tile.
func TestGemmStreamKSchedule(t *testing.T) {
	for grid := 1; grid <= 9; grid++ {
		for tiles := 1; tiles <= 3*grid+2; tiles++ {
			sk := 0
			if tiles > grid {
				sk = tiles % grid
			}
			for kt := 1; kt <= 12; kt++ {
				name := fmt.Sprintf("grid %d, tiles %d, sk %d, kt %d", grid, tiles, sk, kt)
				seen := make([][]int, tiles)
				for i := range seen {
					seen[i] = make([]int, kt)
				}
				finals := make([]int, tiles)
				partialHolders := make([]map[int]bool, tiles)
				for i := range partialHolders {
					partialHolders[i] = map[int]bool{}
				}
				finisher := make([]int, tiles)
				for b := 0; b < grid; b++ {
					partials, finishedSK := 0, false
					for _, w := range gemmItems(b, grid, tiles, sk, kt) {
						require.Less(t, w.kb, w.ke, name)
						for k := w.kb; k < w.ke; k++ {
							seen[w.t][k]++
						}
						if w.final {
							require.Equal(t, kt, w.ke, name)
							finals[w.t]++
							finisher[w.t] = b
							finishedSK = finishedSK || w.t >= tiles-sk
						} else {
							require.False(t, finishedSK, "%s: CTA %d's partial piece comes after its final one", name, b)
							partials++
							partialHolders[w.t][b] = true
						}
					}
					require.LessOrEqual(t, partials, 1, "%s: CTA %d", name, b)
				}
				for tt := 0; tt < tiles; tt++ {
					for k := 0; k < kt; k++ {
						require.Equal(t, 1, seen[tt][k], "%s: tile %d, k tile %d", name, tt, k)
					}
					require.Equal(t, 1, finals[tt], "%s: tile %d", name, tt)
					got := map[int]bool{}
					for _, c := range gemmPartials(finisher[tt], grid, tt, tiles, sk, kt) {
						got[c] = true
					}
					if tt < tiles-sk {
						got = map[int]bool{}
					}
					require.Equal(t, partialHolders[tt], got, "%s: tile %d", name, tt)
				}
			}
		}
	}
}
