package push

import (
	_ "embed"
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

//go:embed pushreduce.cu
var pushReduceSource string

// Module is the CUDA source of the push-reduce kernels.
var Module = &device.Module{Name: "hiercoll_pushreduce", Source: kernels.PeerSource + pushReduceSource}

// Block is the CUDA block size of the push-reduce kernel.
const Block = 512

// MaxChunks bounds the chunks of one push-reduce: each rank's pad holds
// one arrival counter per (source local rank, chunk slot).
const MaxChunks = 32

var pushReduceKernels = map[dtype.DType]*device.Kernel{}

func init() {
	for _, dt := range dtype.All {
		pushReduceKernels[dt] = &device.Kernel{
			Module: Module,
			Name:   "hc_push_reduce_" + dt.String(),
			Block:  Block,
			Host:   pushReduceHost(dt),
		}
	}
}

// Prepare loads on dev the push-reduce kernel for dt (see kernels.Prepare).
func Prepare(dev device.Device, dt dtype.DType) error {
	return kernels.PrepareKernel(dev, pushReduceKernels[dt], dt)
}

// Params describes one node step done by the push-reduce kernel: this
// rank's lws blocks of Count elements at In (block p for local rank p) are
// stored by PushBlocks thread blocks into each peer's scatter region (slot =
// this rank's local rank), chunk by chunk; ReduceBlocks thread blocks wait for
// every peer's chunk and sum the lws blocks (the own one from In) into Out.
//
// Heap offsets are the same on every rank (symmetric memory); Peers is a
// device table of lws 64-bit addresses, local rank p's heap base as mapped
// here (the own entry included).
//
// The values the kernel waits for come from State, this rank's call state
// (CallStateWords words, zeroed at creation, in this rank's memory): the
// launches run so far and the push blocks launched so far, which the last
// block of each launch advances. A launch captured in a CUDA graph thus
// waits for the right values at every replay. Writing a non-zero value into
// the state's abort word (StateAbort) ends every wait of the kernel.
type Params struct {
	In, Out      device.Ptr
	Peers        device.Ptr
	ScatterOff   int64 // byte offset of this step's scatter region in the heap
	CountersOff  int64 // arrival counters: lws × MaxChunks words
	ReadyOff     int64 // ready words: lws
	LWS, Rank    int   // local world size, this rank's local rank
	Count        int64 // elements per block
	Chunks       int
	PushBlocks   int
	ReduceBlocks int
	State        device.Ptr // this rank's call state
}

// The words of a push-reduce call state.
const (
	StateLaunches  = iota // push-reduce launches run (the ready value of the last)
	StatePushed           // push blocks launched (every counter's target after the last launch)
	StateFinished         // blocks finished of the running launch
	StateAbort            // non-zero: every wait ends (set when a peer is gone)
	CallStateWords        // the state's size in 32-bit words
)

// Launch enqueues the push-reduce kernel on s.
func Launch(dev device.Device, s device.Stream, dt dtype.DType, p Params) error {
	k, ok := pushReduceKernels[dt]
	if !ok {
		return fmt.Errorf("push: no push-reduce kernel for %v: %w", dt, device.ErrNotSupported)
	}
	if p.Chunks < 1 || p.Chunks > MaxChunks || p.PushBlocks < 1 || p.ReduceBlocks < 1 || p.LWS < 1 || p.Rank < 0 || p.Rank >= p.LWS || p.State == 0 {
		return fmt.Errorf("push: push-reduce with %d chunks, %d push and %d reduce blocks, local rank %d of %d: %w",
			p.Chunks, p.PushBlocks, p.ReduceBlocks, p.Rank, p.LWS, device.ErrInvalidArgument)
	}
	return dev.Launch(s, k, p.PushBlocks+p.ReduceBlocks, p.In, p.Out, p.Peers, p.ScatterOff, p.CountersOff, p.ReadyOff,
		int32(p.LWS), int32(p.Rank), p.Count, int32(p.Chunks), int32(p.PushBlocks), p.State,
		int32(MaxChunks))
}

// pushReduceHost is the CPU backend's push-reduce: the push role for the
// whole grid first (each push block's counter increment done at once, as
// PushBlocks), then the reduce role, waiting for the peers' counters exactly
// as the GPU's reduce blocks do.
func pushReduceHost(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		if len(args) != 13 {
			return fmt.Errorf("push-reduce takes 13 arguments, got %d: %w", len(args), device.ErrInvalidArgument)
		}
		p, maxChunks, err := pushReduceArgs(args)
		if err != nil {
			return err
		}
		state, err := mem.Bytes(p.State, 4*CallStateWords)
		if err != nil {
			return fmt.Errorf("push-reduce call state: %w", err)
		}
		word := func(i int) uint32 { return binary.LittleEndian.Uint32(state[4*i:]) }
		epoch, target := word(StateLaunches)+1, word(StatePushed)+uint32(p.PushBlocks)
		if err := runPushReduce(mem, dt, p, maxChunks, epoch, target); err != nil {
			return err
		}
		// The whole grid ran as one: this is its last block.
		if err := mem.Store32(p.State.Add(4*StateLaunches), epoch); err != nil {
			return err
		}
		return mem.Store32(p.State.Add(4*StatePushed), target)
	}
}

// pushReduceArgs decodes the kernel's arguments, in Launch's order.
func pushReduceArgs(args []any) (Params, int, error) {
	var p Params
	bad := fmt.Errorf("push-reduce arguments %v: %w", args, device.ErrInvalidArgument)
	ptrs := make([]device.Ptr, 3)
	for i := range ptrs {
		v, ok := args[i].(device.Ptr)
		if !ok {
			return p, 0, bad
		}
		ptrs[i] = v
	}
	i64 := make([]int64, 0, 4)
	for _, i := range []int{3, 4, 5, 8} {
		v, ok := args[i].(int64)
		if !ok {
			return p, 0, bad
		}
		i64 = append(i64, v)
	}
	i32 := make([]int, 0, 5)
	for _, i := range []int{6, 7, 9, 10, 12} {
		v, ok := args[i].(int32)
		if !ok {
			return p, 0, bad
		}
		i32 = append(i32, int(v))
	}
	state, ok := args[11].(device.Ptr)
	if !ok {
		return p, 0, bad
	}
	p = Params{In: ptrs[0], Out: ptrs[1], Peers: ptrs[2], ScatterOff: i64[0], CountersOff: i64[1], ReadyOff: i64[2], Count: i64[3],
		LWS: i32[0], Rank: i32[1], Chunks: i32[2], PushBlocks: i32[3], State: state}
	maxChunks := i32[4]
	if p.LWS < 1 || p.Rank < 0 || p.Rank >= p.LWS || p.Chunks < 1 || p.Chunks > maxChunks || p.PushBlocks < 1 || p.Count < 0 {
		return p, 0, bad
	}
	return p, maxChunks, nil
}

func runPushReduce(mem device.HostMemory, dt dtype.DType, p Params, maxChunks int, epoch, target uint32) error {
	h, err := newHostPush(mem, dt, p, maxChunks)
	if err != nil {
		return err
	}
	if err := h.handshake(epoch); err != nil {
		return err
	}
	// Push role, in the kernel's order: chunk by chunk, peer by peer; then
	// the slots the call does not use.
	for c := 0; c < maxChunks; c++ {
		for i := 1; i < p.LWS; i++ {
			if err := h.push((p.Rank+i)%p.LWS, c); err != nil {
				return err
			}
		}
	}
	// Reduce role.
	for c := 0; c < p.Chunks; c++ {
		if err := h.reduce(c, target); err != nil {
			return err
		}
	}
	return nil
}

// hostPush is one launch of the push-reduce kernel on the CPU backend.
type hostPush struct {
	mem       device.HostMemory
	dt        dtype.DType
	p         Params
	maxChunks int
	es        int64
	heap      []device.Ptr // by local rank, from the peer table
	abort     device.Ptr
}

func newHostPush(mem device.HostMemory, dt dtype.DType, p Params, maxChunks int) (*hostPush, error) {
	table, err := mem.Bytes(p.Peers, int64(p.LWS)*8)
	if err != nil {
		return nil, fmt.Errorf("push-reduce peer table: %w", err)
	}
	h := &hostPush{mem: mem, dt: dt, p: p, maxChunks: maxChunks, es: int64(dt.Size()), heap: make([]device.Ptr, p.LWS),
		abort: p.State.Add(4 * StateAbort)}
	for i := range h.heap {
		h.heap[i] = device.Ptr(binary.LittleEndian.Uint64(table[8*i:]))
	}
	return h, nil
}

func (h *hostPush) ready(owner, src int) device.Ptr {
	return h.heap[owner].Add(h.p.ReadyOff + 4*int64(src))
}

func (h *hostPush) counter(owner, src, c int) device.Ptr {
	return h.heap[owner].Add(h.p.CountersOff + 4*int64(src*h.maxChunks+c))
}

func (h *hostPush) slot(owner, src int) device.Ptr {
	return h.heap[owner].Add(h.p.ScatterOff + int64(src)*h.p.Count*h.es)
}

// chunk is the element range [lo, hi) of chunk c.
func (h *hostPush) chunk(c int) (int64, int64) {
	per := (h.p.Count + int64(h.p.Chunks) - 1) / int64(h.p.Chunks)
	lo := min(per*int64(c), h.p.Count)
	return lo, min(lo+per, h.p.Count)
}

// handshake raises this rank's ready word in every peer's pad and waits
// for every peer's in its own.
func (h *hostPush) handshake(epoch uint32) error {
	p := h.p
	for q := 0; q < p.LWS; q++ {
		if q != p.Rank {
			if err := h.mem.Store32(h.ready(q, p.Rank), epoch); err != nil {
				return err
			}
		}
	}
	for q := 0; q < p.LWS; q++ {
		if q != p.Rank {
			w := device.Word{Addr: h.ready(p.Rank, q), Label: fmt.Sprintf("ready word of local rank %d", q)}
			if err := h.mem.Wait32Or(w, device.GEQ, epoch, h.abort); err != nil {
				return err
			}
		}
	}
	return nil
}

// push stores chunk c of the block for peer q into its scatter buffer (a
// chunk the call uses) and counts it arrived there.
func (h *hostPush) push(q, c int) error {
	p, es := h.p, h.es
	if c < p.Chunks {
		if lo, hi := h.chunk(c); hi > lo {
			from, err := h.mem.Bytes(p.In.Add((int64(q)*p.Count+lo)*es), (hi-lo)*es)
			if err != nil {
				return fmt.Errorf("push-reduce input: %w", err)
			}
			to, err := h.mem.Bytes(h.slot(q, p.Rank).Add(lo*es), (hi-lo)*es)
			if err != nil {
				return fmt.Errorf("push-reduce peer scatter buffer: %w", err)
			}
			copy(to, from)
		}
	}
	return h.mem.Add32(h.counter(q, p.Rank, c), uint32(p.PushBlocks))
}

// reduce waits for every peer's chunk c to reach target and sums the
// chunk's blocks (the own one from the input) into the output.
func (h *hostPush) reduce(c int, target uint32) error {
	p, es := h.p, h.es
	for q := 0; q < p.LWS; q++ {
		if q == p.Rank {
			continue
		}
		w := device.Word{Addr: h.counter(p.Rank, q, c), Label: fmt.Sprintf("arrival counter of local rank %d, chunk %d", q, c)}
		if err := h.mem.Wait32Or(w, device.GEQ, target, h.abort); err != nil {
			return err
		}
	}
	lo, hi := h.chunk(c)
	if hi == lo {
		return nil
	}
	dst, err := h.mem.Bytes(p.Out.Add(lo*es), (hi-lo)*es)
	if err != nil {
		return fmt.Errorf("push-reduce output: %w", err)
	}
	views := make([][]byte, p.LWS)
	for q := range views {
		src := h.slot(p.Rank, q).Add(lo * es)
		if q == p.Rank {
			src = p.In.Add((int64(q)*p.Count + lo) * es)
		}
		if views[q], err = h.mem.Bytes(src, (hi-lo)*es); err != nil {
			return fmt.Errorf("push-reduce block %d: %w", q, err)
		}
	}
	kernels.ReduceRange(h.dt, dst, views, 0, hi-lo)
	return nil
}
