package ring_test

import (
	"os"
	"testing"

	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// The shared kernel-test helpers, under the names these tests use.
var (
	newRNG          = kerneltest.NewRNG
	randomElems     = kerneltest.RandomElems
	referenceReduce = kerneltest.ReferenceReduce
	requireSameBits = kerneltest.RequireSameBits
	poisonElems     = kerneltest.PoisonElems
	simDevice       = kerneltest.SimDevice
	upload          = kerneltest.Upload
	download        = kerneltest.Download
)

type launchRecorder = kerneltest.LaunchRecorder
