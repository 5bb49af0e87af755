// Package intranode is the first dimension of ReduceScatter2D: the
// reduce-scatter among the GPUs of one node of the rows destined to one node
// (a node step), and the one small interface its engines meet.
//
// An engine is a folder: its Go driver, its kernel (CUDA source and Go
// twin) and its tests.
//
//	intranode/        Engine, Maker, Spec, Env, Call, Step, Done; the GEMM signals; rank swizzle
//	  ce/             copy engine: copies to the peers' scatter buffers (no SMs), then a reduce kernel
//	  push/           SM push-reduce: one kernel per step, SM stores to peers, counted arrivals
//	  pull/           one kernel per step: small calls in one shot (pushed into landing slots), larger ones pulled from the peers' inputs (symmetric or registered)
//	  ring/           bounded memory: chunks around the node's ring through FIFO slots with credits
//	  nvls/           NVLink multicast: each block load-reduced by the NVSwitch (gated, opt-in)
//	kernels/          what engines share: the plain reduce kernel, the CUDA prelude peer.cuh
//	symm/             the symmetric heap, its layout and the signal protocol
//
// Imports flow one way: an engine imports intranode, symm, kernels, streams
// and device, never rs2d; rs2d imports the engines it offers.
//
// A context lays out, and allocates, only its engine's regions:
//
//	m := push.NewMaker(spec)   // or ce, pull, ring, nvls: the chosen engine only
//	m.Prepare(dev)             // load its kernels, before anything collective
//	m.AddTo(&layout)           // its pads and buffers in the symmetric layout
//	heap := symm.New(..., &layout)
//	e, _ := m.Make(ctx, env)   // built on the made heap
//
// A call is one loop over node steps (rs2d), the same for every engine:
//
//	e.Begin(s, call)
//	for each node step (node swizzle, own node last):
//	    done := e.Step(s, step)            // rows for node step.Node reduced into step.ReduceTo
//	    rail send after done.Reduced       // internode
//	e.End(s, call)                         // s is after all of the engine's work
//
// A new engine is a new folder: its Maker adds its own regions to the
// layout, its Make may read the peers' copies of the symmetric input region
// the context owns (Env.Input), and its Step may be one kernel on s
// (returning Done{s, s}); the loop needs only to offer it.
//
// Rank swizzle: inside a step a rank sends to its node peers in the order
// lr+1, lr+2, ..., so at any moment each GPU sends to one peer and receives
// from one (RankSwizzle). With GEMM overlap a producer raises per-destination
// GEMM signals (GemmSignals), which the engines that overlap wait on.
//
// Signal words (symm.SignalPad) live in the pad of the rank that waits on
// them and carry values under the context's symm.Protocol: growing with
// every call, or the same every call and reset by their owner after the
// call's last wait. Each engine documents its own words.
package intranode
