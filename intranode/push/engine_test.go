package push_test

import (
	"os"
	"testing"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/enginetest"
	"github.com/seed12530e24/hiercoll/intranode/push"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// The SM engine's calls on one node, driven through the engine interface
// as the rs2d loop drives them (Begin, one Step, End), match the fp64
// reference on every dtype, several calls in a row; a step of a part of
// each block is refused before anything is enqueued.
func TestSMEngineCalls(t *testing.T) {
	enginetest.WholeCalls(t, func(spec intranode.Spec, _ device.Device) (intranode.Maker, error) {
		return push.NewMaker(spec), nil
	})
}

// Chunks: what is asked, within 1..MaxChunks; by size, one per 4 MiB of the
// block, at least one and at most MaxChunks.
func TestSMEngineChunks(t *testing.T) {
	var e push.Engine
	const mib = 1 << 20
	for _, c := range []struct {
		asked, rows int
		rowBytes    int64
		want        int
	}{
		{0, 1, mib, 1},                 // 1 MiB: one
		{0, 16, mib, 4},                // 16 MiB: four
		{0, 1024, mib, push.MaxChunks}, // 1 GiB: the most
		{3, 1, mib, 3},                 // asked: elements, not rows, are cut
		{push.MaxChunks + 5, 64, mib, push.MaxChunks},
	} {
		if got := e.Chunks(c.asked, c.rows, c.rowBytes); got != c.want {
			t.Errorf("Chunks(%d, %d rows of %d bytes) = %d, want %d", c.asked, c.rows, c.rowBytes, got, c.want)
		}
	}
}
