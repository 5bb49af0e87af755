package rs2d_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/world"
)

// simWorld is a simulated world of shape whose stream waits give up after a
// minute (a signal never raised fails the test instead of hanging it),
// closed when the test ends.
func simWorld(t *testing.T, shape bootstrap.Shape) *world.World {
	t.Helper()
	w, err := world.Sim(shape, world.SimOptions{Device: sim.Options{WaitTimeout: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// testContext bounds a test's run on its world: a safety net for a hang,
// far beyond what any of these tests takes on a busy machine.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
