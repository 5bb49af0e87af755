package rs2d

import (
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internode"
)

// Config describes a ReduceScatter2D context. MaxM, N and DType are required.
type Config struct {
	// MaxM is the largest M (rows of the [M, N] input) a call may use; the
	// symmetric buffers are sized for it.
	MaxM int
	// N is the number of columns of every input.
	N int
	// DType is the element type: BF16, F16, F32 or I32.
	DType dtype.DType

	// OverlapWithGEMM makes each scatter copy wait on the device for the GEMM
	// signal of its destination rank (see Context.SignalAddr), instead of for
	// the caller's stream alone.
	OverlapWithGEMM bool
	// SplitFirstBlock, with OverlapWithGEMM, makes the copy engine send the
	// first half of the first block in consumption order (EarlyRows rows)
	// as soon as the producer raises that block's early signal
	// (Signals.RaiseEarly, EarlySignalAddr), and the rest after its signal:
	// the scatter starts half a block sooner, for producers whose blocks
	// take less time than their copies. The producer must then raise both.
	// Placed calls do not split.
	SplitFirstBlock bool
	// ReductionSMs bounds the SMs (thread blocks / CPU workers) the intra-node
	// reduce kernels use while they overlap other work. Default 16 with the
	// copy engine, 32 with the SM engine.
	ReductionSMs int
	// FinalSMs bounds the SMs of the reductions that end a call, when
	// nothing else needs the SMs: the final cross-node reduce, and with
	// OverlapWithGEMM the own node's step (it runs after the own GEMM
	// block, the last one a producer computes). Default: all.
	FinalSMs int
	// Chunks splits each node step so its reduction overlaps its scatter.
	// 0 picks by size (1 with OverlapWithGEMM).
	Chunks int
	// CopyStreams is the number of copy-engine streams the scatter uses
	// (1: one peer at a time; lws-1: every peer at once). 0 picks.
	CopyStreams int
	// Engine moves the rows inside a node: the copy engine (no SMs: the
	// choice when a GEMM holds the SMs) or SM stores in one push-reduce
	// kernel per node step (faster when the SMs are free, and the least
	// latency). Auto: the copy engine with OverlapWithGEMM, else SMs.
	Engine Engine
	// PushSMs bounds the SMs that store to peers with the SM engine.
	// Default 32.
	PushSMs int
	// PushGroup is, with the SM engine, how many chunks go to one peer
	// before the next peer's: 1 cycles the peers every chunk (the
	// reduction starts earliest); Chunks sends a peer its whole block
	// before the next, so that every GPU receives from one peer at a time.
	// 0 picks (see DefaultPushGroup).
	PushGroup int
	// Transport selects the inter-node transport (Auto by default).
	Transport internode.Kind
	// RailLanes is, with the NCCL transport, how many communicators per
	// rail carry each block in parallel (0: internode.DefaultNCCLLanes).
	RailLanes int
	// Timeout bounds host-side waits of New and Close. Default 60s.
	Timeout time.Duration
}

// DefaultPushGroup is PushGroup's default.
const DefaultPushGroup = 1

const (
	defaultReductionSMs = 16
	defaultPushSMs      = 32
	defaultTimeout      = 60 * time.Second
)

// Engine is what moves rows between the GPUs of a node.
type Engine int

// Engines.
const (
	EngineAuto Engine = iota
	EngineCopy        // copy-engine scatter, then a reduce kernel
	EngineSM          // one push-reduce kernel: SM stores to peers, counted arrivals
)

func (e Engine) String() string {
	switch e {
	case EngineAuto:
		return "auto"
	case EngineCopy:
		return "copy"
	case EngineSM:
		return "sm"
	}
	return fmt.Sprintf("engine(%d)", int(e))
}

// ParseEngine accepts the names String prints ("ce" too).
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "auto", "":
		return EngineAuto, nil
	case "copy", "ce":
		return EngineCopy, nil
	case "sm":
		return EngineSM, nil
	}
	return EngineAuto, fmt.Errorf("rs2d: unknown engine %q (want auto, copy or sm): %w", s, device.ErrInvalidArgument)
}

func (c Config) withDefaults(info device.Info, lws int) Config {

	if c.FinalSMs <= 0 {
		c.FinalSMs = max(info.SMs, c.ReductionSMs)
	}
	if c.PushSMs <= 0 {
		c.PushSMs = defaultPushSMs
	}
	if c.PushGroup <= 0 {
		c.PushGroup = DefaultPushGroup
	}
	if info.SMs > 0 {
		c.PushSMs = min(c.PushSMs, info.SMs)
	}
	if c.Engine == EngineAuto {
		c.Engine = EngineSM
		if c.OverlapWithGEMM {
			c.Engine = EngineCopy
		}
	}
	if c.ReductionSMs <= 0 {
		// Beside a GEMM the reduction takes few SMs; alone (the SM engine)
		// it keeps up with the pushes at twice that (measured on H200s).
		c.ReductionSMs = defaultReductionSMs
		if c.Engine == EngineSM {
			c.ReductionSMs = 2 * defaultReductionSMs
		}
	}
	if info.SMs > 0 {
		c.ReductionSMs = min(c.ReductionSMs, info.SMs)
	}
	if c.CopyStreams <= 0 {
		c.CopyStreams = 1
	}
	c.CopyStreams = max(1, min(c.CopyStreams, lws))
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	return c
}

func (c Config) validate(world int) error {
	switch {
	case c.MaxM <= 0:
		return fmt.Errorf("rs2d: MaxM=%d must be positive: %w", c.MaxM, device.ErrInvalidArgument)
	case c.N <= 0:
		return fmt.Errorf("rs2d: N=%d must be positive: %w", c.N, device.ErrInvalidArgument)
	case !c.DType.Valid():
		return fmt.Errorf("rs2d: DType %v is not one of bf16, fp16, fp32, int32: %w", c.DType, device.ErrInvalidArgument)
	case c.MaxM%world != 0:
		return fmt.Errorf("rs2d: MaxM=%d is not divisible by world size %d: %w", c.MaxM, world, device.ErrInvalidArgument)
	case c.Chunks < 0 || c.CopyStreams < 0 || c.ReductionSMs < 0 || c.FinalSMs < 0 || c.PushSMs < 0 || c.PushGroup < 0:
		return fmt.Errorf("rs2d: negative Chunks, CopyStreams, PushGroup or SM budget: %w", device.ErrInvalidArgument)
	case c.RailLanes < 0 || c.RailLanes > internode.MaxNCCLLanes:
		return fmt.Errorf("rs2d: RailLanes=%d: want 0 (default %d) to %d: %w", c.RailLanes, internode.DefaultNCCLLanes, internode.MaxNCCLLanes, device.ErrInvalidArgument)
	case c.Engine < EngineAuto || c.Engine > EngineSM:
		return fmt.Errorf("rs2d: engine %v: %w", c.Engine, device.ErrInvalidArgument)
	case c.SplitFirstBlock && !c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: SplitFirstBlock needs OverlapWithGEMM: %w", device.ErrInvalidArgument)
	case c.Engine == EngineSM && c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: the SM engine does not wait for GEMM signals; use the copy engine (or Auto) with OverlapWithGEMM: %w", device.ErrNotSupported)
	}
	return nil
}

// Tensor is a row-major [Rows, Cols] matrix in device memory.
type Tensor struct {
	Ptr   device.Ptr
	Rows  int
	Cols  int
	DType dtype.DType
}

// Bytes is the tensor's size.
func (t Tensor) Bytes() int64 { return int64(t.Rows) * int64(t.Cols) * int64(t.DType.Size()) }

func (t Tensor) String() string {
	return fmt.Sprintf("[%d, %d] %v at %v", t.Rows, t.Cols, t.DType, t.Ptr)
}
