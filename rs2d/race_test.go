//go:build race

package rs2d_test

// Under the race detector the shape matrix runs every engine, world shape
// and size with one dtype each (every dtype in turn), not every dtype: the
// detector checks the synchronisation, which the dtype does not change, at
// ten times the cost per call.
func init() { raceSubset = true }
