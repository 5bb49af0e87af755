//go:build race

package rs2d_test

// Under the race detector the shape matrices (every engine, world shape and
// size; the ring's rail rounds per shape) run one dtype each, every dtype in
// turn, and the ring's hundred calls twenty: the detector checks the
// synchronisation, which the dtype does not change, at ten times the cost
// per call.
func init() { raceSubset = true }
