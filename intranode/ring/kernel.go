package ring

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

//go:embed ring.cu
var ringSource string

// Module is the CUDA source of the ring kernels.
var Module = &device.Module{Name: "hiercoll_ring", Source: kernels.PeerSource + ringSource}

// Block is the CUDA block size of the ring kernel: one block per channel.
const Block = 512

var ringKernels = map[dtype.DType]*device.Kernel{}

func init() {
	for _, dt := range dtype.All {
		ringKernels[dt] = &device.Kernel{
			Module: Module,
			Name:   "hc_ring_" + dt.String(),
			Block:  Block,
			Host:   ringHost(dt),
		}
	}
}

// Prepare loads the ring kernel of dt on dev (see kernels.Prepare).
func Prepare(dev device.Device, dt dtype.DType) error {
	k, ok := ringKernels[dt]
	if !ok {
		return fmt.Errorf("ring: no ring kernel for %v: %w", dt, device.ErrNotSupported)
	}
	if err := dev.Prepare(k); err != nil {
		return fmt.Errorf("ring: preparing %s: %w", k.Name, err)
	}
	return nil
}

// Params describes one node step done by the ring kernel (ring.cu says
// how it works): this rank's rows for local rank d are Count elements at
// In + d*Stride; the result for this rank goes to Out (Count elements).
// Channels independent rings each take Per elements of every block, in
// Msgs chunks of Chunk elements per hop. State is this rank's call state
// (StateWords(Channels) words in its own memory, zero before the first
// launch): the launches run so far, the abort word, and the messages each
// channel's FIFOs carried before this launch, which the launch reads and
// advances.
//
// Offsets are into the symmetric heap, the same on every rank: the FIFO
// slots (channels × (LWS-1) hops × Slots slots, SlotBytes apart), the tail
// and head words (channels × (LWS-1) each) and the ready words (LWS). Peers
// is a device table of LWS 64-bit heap addresses, local rank p's heap as
// mapped here. Rank0 is the global rank of local rank 0; only the host twin
// uses it, to name ranks in its timeouts.
type Params struct {
	In, Out, Peers     device.Ptr
	Stride, Count      int64
	Per, Chunk         int64
	FifoOff, SlotBytes int64
	TailsOff, HeadsOff int64
	ReadyOff           int64
	Msgs               uint32
	State              device.Ptr
	LWS, Rank, Slots   int
	Channels, Rank0    int
}

// The words of the call state (ring.cu's RS_*): launches run so far,
// blocks finished of the running launch, the abort word, then one word per
// channel (the messages its FIFOs carried).
const (
	stateLaunches = iota
	stateFinished
	stateAbort
	stateMsgs
)

// StateWords is the call state's words for a ring of channels channels.
func StateWords(channels int) int { return stateMsgs + channels }

// AbortWord is the offset in bytes of the abort word in the call state.
const AbortWord = 4 * stateAbort

// Check reports whether the description is one the kernel can run.
func (p Params) Check(dt dtype.DType) error {
	es := int64(dt.Size())
	ok := p.LWS >= 1 && p.Rank >= 0 && p.Rank < p.LWS && p.Slots >= 1 && p.Channels >= 1 && p.Count >= 0 &&
		p.Per >= 1 && p.Chunk >= 1 && p.Msgs >= 1 && p.State != 0 &&
		int64(p.Channels)*p.Per >= p.Count && int64(p.Msgs)*p.Chunk >= p.Per &&
		(p.LWS == 1 || (p.Stride >= p.Count && p.SlotBytes >= p.Chunk*es && p.SlotBytes%16 == 0))
	if !ok {
		return fmt.Errorf("ring: ring step %+v: %w", p, device.ErrInvalidArgument)
	}
	return nil
}

// Launch enqueues the ring kernel on s, one block per channel.
func Launch(dev device.Device, s device.Stream, dt dtype.DType, p Params) error {
	k, ok := ringKernels[dt]
	if !ok {
		return fmt.Errorf("ring: no ring kernel for %v: %w", dt, device.ErrNotSupported)
	}
	if err := p.Check(dt); err != nil {
		return err
	}
	return dev.Launch(s, k, p.Channels, p.In, p.Out, p.Peers, p.Stride, p.Count, p.Per, p.Chunk,
		p.FifoOff, p.SlotBytes, p.TailsOff, p.HeadsOff, p.ReadyOff, p.Msgs, p.State,
		int32(p.LWS), int32(p.Rank), int32(p.Slots), int32(p.Rank0))
}

// tailLabel names word i of the ring tails of local rank owner (the
// chunks its prev posted), headLabel word i of its heads (the slots its
// next freed), on a node whose local rank 0 is global rank rank0.
func tailLabel(rank0, lws, owner, i int) string {
	prev := (owner + lws - 1) % lws
	return fmt.Sprintf("ring tail of rank %d, channel %d, hop %d: chunks posted by rank %d (local rank %d)",
		rank0+owner, i/(lws-1), i%(lws-1)+1, rank0+prev, prev)
}

// headLabel: see tailLabel.
func headLabel(rank0, lws, owner, i int) string {
	next := (owner + 1) % lws
	return fmt.Sprintf("ring head of rank %d, channel %d, hop %d: slots freed by rank %d (local rank %d)",
		rank0+owner, i/(lws-1), i%(lws-1)+2, rank0+next, next)
}

// readyLabel names the ready word of local rank src.
func readyLabel(rank0, lws, src int) string {
	return fmt.Sprintf("ready flag of rank %d (node %d, local rank %d)", rank0+src, rank0/lws, src)
}

// ringHost is the CPU backend's ring kernel: the readiness handshake, then
// one goroutine per channel doing the channel's ops in the kernel's order,
// waiting on the same words.
func ringHost(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		p, err := ringArgs(args, grid)
		if err != nil {
			return err
		}
		if err := p.Check(dt); err != nil {
			return err
		}
		r, err := newHostRing(mem, dt, p)
		if err != nil {
			return err
		}
		if err := r.ready(); err != nil {
			return err
		}
		if r.aborted() {
			return nil
		}
		var wg sync.WaitGroup
		errs := make([]error, p.Channels)
		for ch := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[ch] = r.channel(ch)
			}()
		}
		wg.Wait()
		for _, err := range errs { // the first channel's failure is the one to report
			if err != nil {
				return err
			}
		}
		return mem.Store32(p.State.Add(4*stateLaunches), r.launch)
	}
}

// ringArgs decodes the kernel's arguments, in Launch's order; the
// channels are the grid's blocks.
func ringArgs(args []any, grid int) (Params, error) {
	var p Params
	bad := fmt.Errorf("ring arguments %v: %w", args, device.ErrInvalidArgument)
	if len(args) != 18 {
		return p, bad
	}
	ptrs := []*device.Ptr{&p.In, &p.Out, &p.Peers}
	i64 := []*int64{&p.Stride, &p.Count, &p.Per, &p.Chunk, &p.FifoOff, &p.SlotBytes, &p.TailsOff, &p.HeadsOff, &p.ReadyOff}
	i32 := []*int{&p.LWS, &p.Rank, &p.Slots, &p.Rank0}
	at := 0
	for _, d := range ptrs {
		v, ok := args[at].(device.Ptr)
		if !ok {
			return p, bad
		}
		*d, at = v, at+1
	}
	for _, d := range i64 {
		v, ok := args[at].(int64)
		if !ok {
			return p, bad
		}
		*d, at = v, at+1
	}
	msgs, ok := args[at].(uint32)
	state, ok2 := args[at+1].(device.Ptr)
	if !ok || !ok2 {
		return p, bad
	}
	p.Msgs, p.State, at = msgs, state, at+2
	for _, d := range i32 {
		v, ok := args[at].(int32)
		if !ok {
			return p, bad
		}
		*d, at = int(v), at+1
	}
	p.Channels = grid
	return p, nil
}

// hostRing is one launch of the ring kernel on the CPU backend.
type hostRing struct {
	mem    device.HostMemory
	dt     dtype.DType
	p      Params
	heap   []device.Ptr // by local rank
	launch uint32       // this launch's number
	abort  device.Ptr   // the call state's abort word
}

func newHostRing(mem device.HostMemory, dt dtype.DType, p Params) (*hostRing, error) {
	table, err := mem.Bytes(p.Peers, int64(p.LWS)*8)
	if err != nil {
		return nil, fmt.Errorf("ring peer table: %w", err)
	}
	r := &hostRing{mem: mem, dt: dt, p: p, heap: make([]device.Ptr, p.LWS), abort: p.State.Add(AbortWord)}
	for i := range r.heap {
		r.heap[i] = device.Ptr(binary.LittleEndian.Uint64(table[8*i:]))
	}
	launches, err := r.word(stateLaunches)
	r.launch = launches + 1
	return r, err
}

// word is word i of the call state.
func (r *hostRing) word(i int) (uint32, error) {
	b, err := r.mem.Bytes(r.p.State.Add(4*int64(i)), 4)
	if err != nil {
		return 0, fmt.Errorf("ring call state: %w", err)
	}
	return binary.LittleEndian.Uint32(b), nil
}

// aborted reports whether the abort word is set (a wait ended by it).
func (r *hostRing) aborted() bool {
	v, err := r.word(stateAbort)
	return err == nil && v != 0
}

// wait is the kernel's wait: w reaching v, or the abort word set.
func (r *hostRing) wait(w device.Word, v uint32) error {
	return r.mem.Wait32Or(w, device.GEQ, v, r.abort)
}

// ready raises this rank's ready word on every peer and waits for theirs.
func (r *hostRing) ready() error {
	p := r.p
	word := func(owner, src int) device.Ptr { return r.heap[owner].Add(p.ReadyOff + 4*int64(src)) }
	for q := 0; q < p.LWS; q++ {
		if q != p.Rank {
			if err := r.mem.Store32(word(q, p.Rank), r.launch); err != nil {
				return err
			}
		}
	}
	for q := 0; q < p.LWS; q++ {
		if q != p.Rank {
			w := device.Word{Addr: word(p.Rank, q), Label: readyLabel(p.Rank0, p.LWS, q)}
			if err := r.wait(w, r.launch); err != nil {
				return err
			}
		}
	}
	return nil
}

// channel runs channel ch's ops: for each chunk, the lws hops of the
// kernel, with the same waits and posts.
func (r *hostRing) channel(ch int) error {
	p := r.p
	es := int64(r.dt.Size())
	hops := p.LWS - 1
	me, next, prev := r.heap[p.Rank], r.heap[(p.Rank+1)%p.LWS], r.heap[(p.Rank+hops)%p.LWS]
	c0 := int64(ch) * p.Per
	c1 := min(c0+p.Per, p.Count)
	base, err := r.word(stateMsgs + ch)
	if err != nil {
		return err
	}
	for k := uint32(0); k < p.Msgs; k++ {
		lo := c0 + int64(k)*p.Chunk
		n := max(0, min(lo+p.Chunk, c1)-lo)
		msg := base + k
		slot := int64(msg % uint32(p.Slots))
		for s := 0; s < p.LWS; s++ {
			d := (p.Rank - s - 1 + 2*p.LWS) % p.LWS
			recv, send := s >= 1, s+1 < p.LWS
			wIn, wOut := ch*hops+s-1, ch*hops+s
			slotAt := func(heap device.Ptr, w int) device.Ptr {
				return heap.Add(p.FifoOff + (int64(w)*int64(p.Slots)+slot)*p.SlotBytes)
			}
			if recv {
				w := device.Word{Addr: me.Add(p.TailsOff + 4*int64(wIn)), Label: tailLabel(p.Rank0, p.LWS, p.Rank, wIn)}
				if err := r.wait(w, msg+1); err != nil {
					return err
				}
			}
			if send {
				w := device.Word{Addr: me.Add(p.HeadsOff + 4*int64(wOut)), Label: headLabel(p.Rank0, p.LWS, p.Rank, wOut)}
				if err := r.wait(w, msg+1-uint32(p.Slots)); err != nil {
					return err
				}
			}
			dst := p.Out.Add(lo * es)
			if send {
				dst = slotAt(next, wOut)
			}
			var src device.Ptr
			if recv {
				src = slotAt(me, wIn)
			}
			if err := r.combine(dst, src, p.In.Add((int64(d)*p.Stride+lo)*es), n); err != nil {
				return err
			}
			if send {
				if err := r.mem.Add32(next.Add(p.TailsOff+4*int64(wOut)), 1); err != nil {
					return err
				}
			}
			if recv {
				if err := r.mem.Add32(prev.Add(p.HeadsOff+4*int64(wIn)), 1); err != nil {
					return err
				}
			}
		}
	}
	return r.mem.Store32(p.State.Add(4*int64(stateMsgs+ch)), base+p.Msgs)
}

// combine is dst = slot + own over n elements (own alone when slot is 0),
// summed from 0 in that order in fp32 (int32 wraps) and rounded once.
func (r *hostRing) combine(dst, slot, own device.Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	bytes := n * int64(r.dt.Size())
	to, err := r.mem.Bytes(dst, bytes)
	if err != nil {
		return fmt.Errorf("ring destination: %w", err)
	}
	mine, err := r.mem.Bytes(own, bytes)
	if err != nil {
		return fmt.Errorf("ring input: %w", err)
	}
	views := [][]byte{mine}
	if slot != 0 {
		got, err := r.mem.Bytes(slot, bytes)
		if err != nil {
			return fmt.Errorf("ring slot: %w", err)
		}
		views = [][]byte{got, mine}
	}
	kernels.ReduceRange(r.dt, to, views, 0, n)
	return nil
}
