package gemmrs

import (
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// SetTestHooks perturbs g's producer (see hooks): order rearranges the
// overlapped GEMM's blocks, beforeBlock runs before each block's GEMM is
// enqueued, and signals, when set, takes over raising the signals.
func SetTestHooks(g *GemmRS, order func([]int) []int, beforeBlock func(gemm device.Stream, d int) error,
	signals func(gemmDone device.Event, raise func(s device.Stream, d int) error) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hooks = &hooks{order: order, beforeBlock: beforeBlock, signals: signals}
}

// SetAutoThresholds sets the FLOP and rows per rank below which g's Auto
// mode runs Sequential.
func SetAutoThresholds(g *GemmRS, flop float64, rows int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.minFLOP, g.minRows = flop, rows
}

// SequentialContext is g's context of the sequential calls.
func SequentialContext(g *GemmRS) *rs2d.Context { return g.seq }

// OverlapContext is g's context of the overlapped calls.
func OverlapContext(g *GemmRS) *rs2d.Context { return g.rs }
