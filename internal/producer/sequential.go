package producer

import "github.com/seed12530e24/hiercoll/rs2d"

// SequentialConfig is the configuration of the context that reduce-scatters
// small products after their GEMM (gemmrs's sequential calls, the C ABI's
// small products), beside an overlap context of configuration overlap: its
// sizes, transport, timeout and graphs; the default engine (the pull engine
// on nodes of 2 to 8 GPUs, whose symmetric input then takes C) without GEMM
// overlap and without its large-call extras (the ring's FIFOs, the copy
// engine's landing slots), so that beyond C it adds its pads and small
// calls' slots.
func SequentialConfig(overlap rs2d.Config) rs2d.Config {
	return rs2d.Config{MaxM: overlap.MaxM, N: overlap.N, DType: overlap.DType, Transport: overlap.Transport,
		Timeout: overlap.Timeout, Graphs: overlap.Graphs, Tuning: rs2d.Tuning{RingFromBytes: -1, CopyEnginePullBytes: -1}}
}
