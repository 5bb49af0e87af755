package rs2d_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// A bound exactly at what the planner says a context takes is a bound New
// keeps: on every world shape, for the direct path and the ring (rounds on
// more than one node), the pull engine (in rounds: the bound at the plan of
// the direct path keeps it whole), over IPC and with Auto (which plans for
// the most any transport takes), runWorld finds New's allocations within
// the bound.
func TestBoundAtThePlanHolds(t *testing.T) {
	shapes := []bootstrap.Shape{{Nodes: 1, LocalSize: 2}, {Nodes: 2, LocalSize: 1}, {Nodes: 2, LocalSize: 2}, {Nodes: 4, LocalSize: 1},
		{Nodes: 2, LocalSize: 4}, {Nodes: 3, LocalSize: 3}}
	const rowsPer, n = 5, 100
	dt := dtype.F32
	for _, shape := range shapes {
		for _, engine := range []rs2d.Engine{rs2d.EngineAuto, rs2d.EngineRing, rs2d.EnginePull} {
			for _, transport := range []internode.Kind{internode.Auto, internode.IPC} {
				t.Run(fmt.Sprintf("%v/%v/%v", shape, engine, transport), func(t *testing.T) {
					t.Parallel()
					knobs := ringKnobs(dt, 1)
					cfg := rs2d.Config{MaxM: rowsPer * shape.World(), N: n, DType: dt, Engine: engine, Transport: transport}
					cfg.Tuning = knobs
					mem, err := rs2d.MemoryOf(cfg, shape, 0)
					require.NoError(t, err)
					cfg.MaxSymmetricBytes = mem.Total()
					runWorld(t, runSpec{shape: shape, dt: dt, rowsPer: rowsPer, n: n, calls: 2, cfg: cfg, knobs: knobs})
				})
			}
		}
	}
}
