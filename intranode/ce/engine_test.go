package ce_test

import (
	"os"
	"testing"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ce"
	"github.com/seed12530e24/hiercoll/intranode/enginetest"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// The copy engine's calls on one node, driven through the engine interface
// as the rs2d loop drives them (Begin, one Step, End), match the fp64
// reference on every dtype, several calls in a row; a step of a part of
// each block is refused before anything is enqueued.
func TestCopyEngineCalls(t *testing.T) {
	enginetest.WholeCalls(t, func(spec intranode.Spec, _ device.Device) (intranode.Maker, error) {
		return ce.NewMaker(spec), nil
	})
}

// Chunks: what is asked, of whole rows; by size, one per 4 MiB of the block,
// at least one, at most eight and no more than the rows.
func TestCopyEngineChunks(t *testing.T) {
	var e ce.Engine
	const mib = 1 << 20
	for _, c := range []struct {
		asked, rows int
		rowBytes    int64
		want        int
	}{
		{0, 1, mib, 1},      // 1 MiB: one
		{0, 16, mib, 4},     // 16 MiB: four
		{0, 1024, mib, 8},   // 1 GiB: the most
		{0, 2, 64 * mib, 2}, // two rows: two at most
		{3, 10, mib, 3},     // asked
		{5, 2, mib, 2},      // asked, but two rows
	} {
		if got := e.Chunks(c.asked, c.rows, c.rowBytes); got != c.want {
			t.Errorf("Chunks(%d, %d rows of %d bytes) = %d, want %d", c.asked, c.rows, c.rowBytes, got, c.want)
		}
	}
}
