//go:build race

package gemmrs_test

// raceDetector reports whether the tests run under the race detector.
const raceDetector = true
