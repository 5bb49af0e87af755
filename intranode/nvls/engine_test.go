package nvls_test

import (
	"testing"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/enginetest"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
)

// The NVLS engine's calls on one node, on the simulated multicast objects,
// driven through the engine interface as the rs2d loop drives them (Begin,
// one Step, End), match the fp64 reference on every dtype, several calls in
// a row; a step of a part of each block is refused before anything is
// enqueued.
func TestNVLSEngineCalls(t *testing.T) {
	enginetest.WholeCalls(t, func(spec intranode.Spec, dev device.Device) (intranode.Maker, error) {
		m := nvls.NewMaker(spec)
		var err error
		m.Permit, err = device.AllowMulticast(dev, "nvls engine test")
		return m, err
	})
}
