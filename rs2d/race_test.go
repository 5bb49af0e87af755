//go:build race

package rs2d_test

// Under the race detector the shape matrices run a subset (every engine and
// world shape, with two of the four sizes and one dtype each, every size
// and dtype in turn; the ring's rail rounds per shape with one dtype) and
// the ring's hundred calls twenty: the detector checks the
// synchronisation, which the dtype does not change, at ten times the cost
// per call.
func init() { raceSubset = true }
