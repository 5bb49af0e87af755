package symm_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// Regions whose sizes do not fit make the layout's error, never a panic or
// a heap size that wrapped around; New refuses such a layout on every rank
// before allocating anything.
func TestLayoutThatDoesNotFit(t *testing.T) {
	for name, build := range map[string]func(l *symm.Layout){
		"negative region": func(l *symm.Layout) { l.Add("scatter", -8) },
		"region past 2^50": func(l *symm.Layout) {
			l.AddPad("arrived", 4)
			l.Add("scatter", 1<<62)
		},
		"sum past 2^50": func(l *symm.Layout) {
			l.Add("scatter", 1<<49)
			l.Add("rail", 1<<49)
			l.Add("tail", 1<<49)
		},
		"sum that wraps int64": func(l *symm.Layout) {
			l.Add("scatter", math.MaxInt64-100)
			l.Add("rail", math.MaxInt64-100)
		},
		"pad of too many words": func(l *symm.Layout) { l.AddPad("arrived", math.MaxInt) },
	} {
		t.Run(name, func(t *testing.T) {
			layout := func(int) *symm.Layout {
				l := &symm.Layout{}
				build(l)
				return l
			}
			l := layout(0)
			require.ErrorIs(t, l.Err(), device.ErrInvalidArgument)
			require.GreaterOrEqual(t, l.Size(), int64(symm.Align))
			baseline := sim.Live()
			w := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, false)
			errs := newOnEveryRank(t, w, layout, func(r world.Rank) device.Device { return r.Dev })
			for rank, err := range errs {
				require.ErrorIs(t, err, device.ErrInvalidArgument, "rank %d", rank)
				require.ErrorContains(t, err, "does not fit", "rank %d", rank)
			}
			require.Equal(t, baseline.Allocs, sim.Live().Allocs, "nothing was allocated")
		})
	}
	var ok symm.Layout
	ok.Add("scatter", 1<<40)
	require.NoError(t, ok.Err())
	require.EqualValues(t, 1<<40, ok.Size())
}
