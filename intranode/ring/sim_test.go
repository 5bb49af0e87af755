package ring_test

import (
	"os"
	"testing"

	"github.com/seed12530e24/hiercoll/device/sim"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }
