package rs2d

// Tuning are the settings benchmarks sweep and most users leave alone; the
// zero Tuning is every default. Every rank passes the same.
type Tuning struct {
	// ReductionSMs bounds the SMs of the intra-node reduce while it runs
	// beside other work: the copy engine's reduce kernels beside a GEMM
	// (default 16), the SM engine's reduce blocks beside its push blocks
	// (default 32); and the pull engine's whole node step (default 32;
	// in rounds on one node two rounds' launches overlap, each on this
	// budget, so the engine holds up to twice it).
	ReductionSMs int
	// Chunks cuts each node step of the SM and copy engines so that its
	// reduction overlaps its scatter (0: by size, as the engine cuts; 1
	// with GEMM overlap). The other engines move blocks whole.
	Chunks int
	// RailLanes is, with the NCCL rail transport, how many communicators
	// per rail carry each block in parallel.
	RailLanes int
	// SplitFirstBlock, with GEMM overlap, has the producer raise an early
	// signal after the first half of the first block in consumption order
	// (Signals.EarlyRows), so the copy engine starts half a block sooner.
	SplitFirstBlock bool
	// Segments is, with GEMM overlap, how many signals each destination's
	// rows come in (0: one; at most MaxSegments), for a producer that
	// finishes rows finer than a block (gemmrs's own GEMM).
	Segments int
	// RingSlots, RingChunkBytes and RingChannels shape the ring's FIFOs:
	// slots per node peer, bytes per slot (one chunk), and independent
	// rings (one thread block each); of the bounded-memory ring (EngineRing,
	// whose chunk left at 0 shrinks to fit Config.MaxSymmetricBytes) and of
	// the pull engine's ring for large calls (RingFromBytes; 0: its
	// defaults, 128 channels of 2 slots of 256 KiB).
	RingSlots      int
	RingChunkBytes int64
	RingChannels   int
	// RingFromBytes is, for the pull engine on one node of more than 2
	// GPUs, the smallest block (bytes of one destination's rows per rank)
	// of a whole call that goes around a ring of SM stores (intranode/ring)
	// instead of being pulled (0: the default, 8 MiB; negative: never).
	// The ring reads each rank's input where it lies, so such a call
	// copies nothing in, and rounds its partial sums to the dtype at each
	// of its GPUs per node − 1 hops (Context.Roundings), as NCCL's ring
	// does. Its FIFOs take channels × (GPUs per node − 1) × slots × chunk
	// bytes of symmetric memory where a block of MaxM rows reaches it and
	// the direct path fits MaxSymmetricBytes with them.
	RingFromBytes int64
	// OneShotBytes is, for the pull engine, the largest block (bytes of
	// one destination's rows per rank) of a whole call that each rank
	// pushes in one shot into its peers' landing slots instead of their
	// pulling it (0: the default, 2 MiB / GPUs per node; negative: never).
	// The slots take 2 × GPUs per node × OneShotBytes of symmetric memory
	// (of at most the block of MaxM rows).
	OneShotBytes int64
	// CopyEnginePullBytes is, for the pull engine, the smallest block
	// (bytes of one destination's rows per rank) of a whole call of a
	// registered input (Register) or of the symmetric input (Input) that
	// each rank's copy engine pulls from its node peers, the reduction
	// stream summing each chunk as it lands, instead of the pull kernel's
	// SM loads (0: the default, 256 MiB on one node of 2 GPUs, where it was
	// measured, and never elsewhere: on 4 GPUs the SM loads measured
	// faster; negative: never). Its landing slots
	// take 3 × (GPUs per node − 1) chunks of symmetric memory, and are left
	// out where they would not fit MaxSymmetricBytes.
	CopyEnginePullBytes int64
	// CopyEnginePullChunk is the bytes of each of those landing slots and
	// copies (0: by size, a quarter of the block, 64 to 128 MiB; at most a
	// block).
	CopyEnginePullChunk int64
}

// MaxSegments bounds Tuning.Segments.
const MaxSegments = 64

// defaultReductionSMs is ReductionSMs's default beside a GEMM (the copy
// engine); beside the SM engine's pushes the reduce takes twice as many,
// which keeps up with them, and so does the pull engine (on 4 and 2 H200s
// more SMs read no faster: benchmarks/RESULTS.md).
const defaultReductionSMs = 16

// ReductionSMsOf is the reduce's SM budget t gives on a device of sms SMs
// (0: unknown) with engine e.
func (t Tuning) ReductionSMsOf(e Engine, sms int) int {
	n := t.ReductionSMs
	if n <= 0 {
		n = defaultReductionSMs
		if e == EngineSM || e == EnginePull {
			n *= 2
		}
	}
	if sms > 0 {
		n = min(n, sms)
	}
	return n
}
