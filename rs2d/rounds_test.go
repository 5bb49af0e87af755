package rs2d_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/rs2d"
)

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
		got := rs2d.RoundRows(c.rpr, c.per, c.shortFirst)
		require.Equal(t, c.want, got, "%d rows in rounds of at most %d, short first %v", c.rpr, c.per, c.shortFirst)
	}
	for rpr := 1; rpr <= 70; rpr++ {
		for per := 1; per <= rpr; per++ {
			for _, shortFirst := range []bool{false, true} {
				rows := rs2d.RoundRows(rpr, per, shortFirst)
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
