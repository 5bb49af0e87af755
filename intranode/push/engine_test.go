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
