package rs2d

import (
	"fmt"
	"math"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/internal/sizes"
	"github.com/seed12530e24/hiercoll/internode"
	"github.com/seed12530e24/hiercoll/intranode/pull"
)

// Config describes a ReduceScatter2D context. MaxM, N and DType are
// required; the rest have defaults.
type Config struct {
	// MaxM is the largest M (rows of the [M, N] input) a call may use; the
	// symmetric buffers are sized for it.
	MaxM int
	// N is the number of columns of every input.
	N int
	// DType is the element type: BF16, F16, F32 or I32.
	DType dtype.DType
	// OverlapWithGEMM makes each scatter copy wait on the device for the
	// GEMM signal of its destination rank (Context.NextSignals), instead of
	// for the caller's stream alone.
	OverlapWithGEMM bool
	// Engine moves the rows inside a node. Auto picks the copy engine with
	// OverlapWithGEMM (the GEMM holds the SMs), else the pull engine (small
	// calls in one shot, larger ones read in place from the peers'
	// symmetric inputs: Context.Input and Register make those copy-free) on
	// nodes of 2 to pull.MaxLocalSize GPUs, else SM stores (nothing moves
	// inside a node of one GPU); where MaxSymmetricBytes leaves the direct
	// path no room, the pull engine in rounds, or the ring where those do
	// not fit either; never NVLS. It is in Config because an engine is a
	// user's choice by name: engines that touch special hardware run only
	// when named (NVLS: and only through device.AllowMulticast's gate).
	Engine Engine
	// Transport selects the inter-node transport (Auto by default).
	Transport internode.Kind
	// Graphs lets calls be captured in CUDA graphs (a torch.cuda.graph, a
	// stream capture) and replayed, mixed freely with calls made directly:
	// every call's signal words carry the same values and are reset on the
	// device (symm.Replayable). A GEMM producer then raises its signals for
	// a call only after the previous call in stream order, and one that
	// gives a call up after raising them clears them (Signals.Clear).
	// Without it, a call on a stream being captured is refused. The NVSHMEM
	// transport cannot replay; IPC and NCCL can. Close waits for the calls
	// made directly, not for replays: synchronize those before Close.
	Graphs bool
	// Timeout bounds host-side waits of New and Close. Default 60s.
	Timeout time.Duration
	// MaxSymmetricBytes bounds the device memory of the context's buffers
	// per rank (0: no bound). When the direct path's buffers (Memory: the
	// scatter buffer of MaxM × N elements, the rail buffers, the pads)
	// would exceed it, an Auto engine becomes the ring, whose memory does
	// not grow with M; New fails with ErrInvalidArgument, naming the
	// minimum, when even the ring does not fit.
	MaxSymmetricBytes int64
	// Tuning are the settings benchmarks sweep (zero: every default).
	Tuning Tuning
}

const defaultTimeout = 60 * time.Second

// Engine is what moves rows between the GPUs of a node.
type Engine int

// Engines.
const (
	EngineAuto Engine = iota
	EngineCopy        // copy-engine scatter, then a reduce kernel
	EngineSM          // one push-reduce kernel: SM stores to peers, counted arrivals
	EngineRing        // the bounded-memory ring: FIFO slots per peer, head/tail credits
	EngineNVLS        // NVLink multicast: each block load-reduced by the NVSwitch (gated: see New)
	EnginePull        // one pull-reduce kernel: each rank reads its block from the peers' symmetric inputs
)

func (e Engine) String() string {
	switch e {
	case EngineAuto:
		return "auto"
	case EngineCopy:
		return "copy"
	case EngineSM:
		return "sm"
	case EngineRing:
		return "ring"
	case EngineNVLS:
		return "nvls"
	case EnginePull:
		return "pull"
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
	case "ring":
		return EngineRing, nil
	case "nvls":
		return EngineNVLS, nil
	case "pull":
		return EnginePull, nil
	}
	return EngineAuto, fmt.Errorf("rs2d: unknown engine %s (want auto, copy, sm, pull, ring or nvls): %w", hcerr.Quote(s), device.ErrInvalidArgument)
}

// known reports whether e is one of the engines (unknown ones print as
// "engine(N)").
func (e Engine) known() bool {
	_, err := ParseEngine(e.String())
	return err == nil
}

// withDefaults is c with its defaults filled in for nodes of localSize
// GPUs.
func (c Config) withDefaults(localSize int) Config {
	if c.Engine == EngineAuto {
		switch {
		case c.OverlapWithGEMM:
			c.Engine = EngineCopy
		case localSize > 1 && localSize <= pull.MaxLocalSize:
			c.Engine = EnginePull
		default:
			c.Engine = EngineSM
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	return c
}

func (c Config) validate(world int) error {
	k := c.Tuning
	switch {
	case c.MaxM <= 0:
		return fmt.Errorf("rs2d: MaxM=%d must be positive: %w", c.MaxM, device.ErrInvalidArgument)
	case c.N <= 0:
		return fmt.Errorf("rs2d: N=%d must be positive: %w", c.N, device.ErrInvalidArgument)
	case !c.DType.Valid():
		return fmt.Errorf("rs2d: DType %v is not one of bf16, fp16, fp32, int32: %w", c.DType, device.ErrInvalidArgument)
	case c.MaxM%world != 0:
		return fmt.Errorf("rs2d: MaxM=%d is not divisible by world size %d: %w", c.MaxM, world, device.ErrInvalidArgument)
	case !c.Engine.known():
		return fmt.Errorf("rs2d: engine %v: %w", c.Engine, device.ErrInvalidArgument)
	case c.MaxSymmetricBytes < 0:
		return fmt.Errorf("rs2d: MaxSymmetricBytes=%d must be 0 (no bound) or positive: %w", c.MaxSymmetricBytes, device.ErrInvalidArgument)
	case c.Engine == EngineRing && c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: the ring does not wait for GEMM signals; use the copy engine (or Auto, without a MaxSymmetricBytes the direct path exceeds) with OverlapWithGEMM: %w", device.ErrNotSupported)
	case k.RingSlots < 0 || k.RingChannels < 0 || k.RingChunkBytes < 0:
		return fmt.Errorf("rs2d: negative ring slots, channels or chunk bytes: %w", device.ErrInvalidArgument)
	case c.Engine == EngineSM && c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: the SM engine does not wait for GEMM signals; use the copy engine (or Auto) with OverlapWithGEMM: %w", device.ErrNotSupported)
	case c.Engine == EnginePull && c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: the pull engine does not wait for GEMM signals; use the copy engine (or Auto) with OverlapWithGEMM: %w", device.ErrNotSupported)
	case c.Engine == EngineNVLS && c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: the NVLS engine does not wait for GEMM signals; use the copy engine (or Auto) with OverlapWithGEMM: %w", device.ErrNotSupported)
	case k.Chunks < 0 || k.ReductionSMs < 0:
		return fmt.Errorf("rs2d: negative chunks or SM budget: %w", device.ErrInvalidArgument)
	case k.RailLanes < 0 || k.RailLanes > internode.MaxNCCLLanes:
		return fmt.Errorf("rs2d: %d rail lanes: want 0 (default %d) to %d: %w", k.RailLanes, internode.DefaultNCCLLanes, internode.MaxNCCLLanes, device.ErrInvalidArgument)
	case k.Segments < 0 || k.Segments > MaxSegments:
		return fmt.Errorf("rs2d: %d signal segments: want 0 to %d: %w", k.Segments, MaxSegments, device.ErrInvalidArgument)
	case k.Segments > 1 && (!c.OverlapWithGEMM || k.SplitFirstBlock || k.Chunks > 1):
		return fmt.Errorf("rs2d: signal segments need OverlapWithGEMM, without a split first block or chunks: %w", device.ErrInvalidArgument)
	case k.SplitFirstBlock && !c.OverlapWithGEMM:
		return fmt.Errorf("rs2d: splitting the first block needs OverlapWithGEMM: %w", device.ErrInvalidArgument)
	}
	// Every buffer is sized from MaxM × N × element size: it must fit
	// before anything is computed from it.
	_, err := sizes.Bytes("rs2d: MaxM × N × element size", int64(c.MaxM), int64(c.N), int64(c.DType.Size()))
	return err
}

// Tensor is a row-major [Rows, Cols] matrix in device memory.
type Tensor struct {
	Ptr   device.Ptr
	Rows  int
	Cols  int
	DType dtype.DType
}

// Bytes is the tensor's size. A size that does not fit (sizes.Max, or
// negative dimensions) saturates at math.MaxInt64 instead of wrapping
// around, so that a range check against an allocation refuses it.
func (t Tensor) Bytes() int64 {
	n, ok := sizes.Product(int64(t.Rows), int64(t.Cols), int64(t.DType.Size()))
	if !ok {
		return math.MaxInt64
	}
	return n
}

// checkAligned refuses a tensor whose start is not a multiple of its element
// size: the kernels load and store whole elements, and one that is not
// aligned to its size faults on GPUs (no framework makes such a tensor).
func (t Tensor) checkAligned(what string) error {
	if es := int64(t.DType.Size()); es > 0 && int64(t.Ptr)%es != 0 {
		return fmt.Errorf("rs2d: %s at %v is not aligned to its %d-byte %v elements: %w", what, t.Ptr, es, t.DType, device.ErrInvalidArgument)
	}
	return nil
}

func (t Tensor) String() string {
	return fmt.Sprintf("[%d, %d] %v at %v", t.Rows, t.Cols, t.DType, t.Ptr)
}
