package sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
)

// Host is one simulated machine: an address space shared by the simulated
// GPUs on it, as unified virtual addressing does on a real host. Ranks of an
// in-process world that share a Host can map each other's memory (peer views);
// ranks on different Hosts cannot, as on different machines.
type Host struct {
	id   uint64
	name string

	mu      sync.RWMutex
	regions []*region // sorted by base
	next    uint64    // next free address

	// changed is closed and replaced whenever device memory is written by a
	// stream, so that stream wait-values re-check their word.
	chMu    sync.Mutex
	changed chan struct{}

	// The waits on this host's words that are blocked, or timed out of
	// late, so that a timeout can name the waits stuck beside it (stuck.go).
	stuckMu sync.Mutex
	stuck   map[*stuckWait]struct{}

	// Simulated multicast objects and their mappings (multicast.go).
	mcMu      sync.Mutex
	mcObjects map[uint64]*mcObject
	mcMaps    []*mcMapping
	mcNext    uint64
}

type region struct {
	base   device.Ptr
	data   []byte
	owner  *Device
	freed  bool // the owner freed it; it stays while peer views remain
	views  int
	handle uint64
	// openers counts the open views by device: as with CUDA's
	// cuIpcOpenMemHandle, a device maps one allocation once.
	openers map[*Device]int
}

var hostIDs atomic.Uint64

// NewHost returns a fresh simulated machine with the given name (used as its
// HostID; names need not be unique, the backend adds a number).
func NewHost(name string) *Host {
	id := hostIDs.Add(1)
	return &Host{
		id:        id,
		name:      fmt.Sprintf("%s#%d", name, id),
		next:      0x7f0000000000 + id<<36, // disjoint address ranges per host help debugging
		changed:   make(chan struct{}),
		mcObjects: map[uint64]*mcObject{},
	}
}

// Name is the host's identity, reported as device.Info.HostID.
func (h *Host) Name() string { return h.name }

func (h *Host) notify() {
	h.chMu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.chMu.Unlock()
}

func (h *Host) changes() <-chan struct{} {
	h.chMu.Lock()
	defer h.chMu.Unlock()
	return h.changed
}

func (h *Host) alloc(owner *Device, size int64) (device.Ptr, error) {
	if size <= 0 {
		return 0, fmt.Errorf("sim: alloc of %d bytes: %w", size, device.ErrInvalidArgument)
	}
	if err := reserve(owner.name, size); err != nil {
		return 0, err
	}
	// Go's allocator returns 8-byte aligned memory for large byte slices;
	// 32-bit atomics on word offsets need no more.
	data := make([]byte, size)
	h.mu.Lock()
	defer h.mu.Unlock()
	base := h.reserveLocked(size)
	r := &region{base: base, data: data, owner: owner, handle: uint64(base)}
	h.regions = append(h.regions, r) // addresses only grow: stays sorted
	live.allocs.Add(1)
	owner.inUse.Add(size)
	return base, nil
}

// reserve returns an address range of size bytes backed by no region (a
// multicast mapping).
func (h *Host) reserve(size int64) device.Ptr {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reserveLocked(size)
}

func (h *Host) reserveLocked(size int64) device.Ptr {
	base := device.Ptr(h.next)
	h.next += uint64((size + 4095) &^ 255) // a gap after each range catches overruns
	return base
}

// find returns the region holding [p, p+n) (n may be 0).
func (h *Host) find(p device.Ptr, n int64) (*region, int64, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	i := sort.Search(len(h.regions), func(i int) bool { return h.regions[i].base > p }) - 1
	if i < 0 {
		return nil, 0, fmt.Errorf("sim: address %v is not device memory: %w", p, device.ErrInvalidArgument)
	}
	r := h.regions[i]
	if r.freed && r.views == 0 {
		return nil, 0, fmt.Errorf("sim: address %v is in freed memory: %w", p, device.ErrInvalidArgument)
	}
	// Unsigned: an address far past the region (a negative offset added to
	// a pointer) must not wrap into a negative offset.
	off, size := uint64(p-r.base), uint64(len(r.data))
	if n < 0 || off > size || uint64(n) > size-off {
		return nil, 0, fmt.Errorf("sim: access of %d bytes at %v runs past the end of its %d-byte allocation at %v: %w",
			n, p, len(r.data), r.base, device.ErrInvalidArgument)
	}
	return r, int64(off), nil
}

// Bytes returns the memory at [p, p+n) on this host.
func (h *Host) Bytes(p device.Ptr, n int64) ([]byte, error) {
	r, off, err := h.find(p, n)
	if err != nil {
		if h.isMulticast(p) {
			return nil, fmt.Errorf("sim: plain access of %d bytes at the multicast address %v (only multimem operations may access it): %w",
				n, p, device.ErrInvalidArgument)
		}
		return nil, err
	}
	return r.data[off : off+n : off+n], nil
}

func (h *Host) word(p device.Ptr) (*uint32, error) {
	if p%4 != 0 {
		return nil, fmt.Errorf("sim: 32-bit word at unaligned address %v: %w", p, device.ErrInvalidArgument)
	}
	b, err := h.Bytes(p, 4)
	if err != nil {
		return nil, err
	}
	return (*uint32)(unsafe.Pointer(&b[0])), nil
}

// wait blocks until the word at w.Addr satisfies cmp v, or fails after
// timeout with a TimeoutError naming the stream and the word.
func (h *Host) wait(stream string, timeout time.Duration, w device.Word, cmp device.Cmp, v uint32) error {
	return h.waitOr(stream, timeout, w, cmp, v, 0)
}

// waitOr is wait that also ends, without error, once the word at abort (0:
// none) is not 0.
func (h *Host) waitOr(stream string, timeout time.Duration, w device.Word, cmp device.Cmp, v uint32, abort device.Ptr) error {
	if cmp != device.EQ && cmp != device.GEQ {
		return fmt.Errorf("sim: wait comparison %v: %w", cmp, device.ErrNotSupported)
	}
	word, err := h.word(w.Addr)
	if err != nil {
		return fmt.Errorf("wait on %s: %w", w.Label, err)
	}
	aborted := func() bool { return false }
	if abort != 0 {
		a, err := h.word(abort)
		if err != nil {
			return fmt.Errorf("wait on %s: abort word: %w", w.Label, err)
		}
		aborted = func() bool { return atomic.LoadUint32(a) != 0 }
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var me *stuckWait // registered once the wait blocks
	for {
		changed := h.changes() // before the check: no lost wake-up
		got := atomic.LoadUint32(word)
		if cmp.Holds(got, v) || aborted() {
			h.unstick(me)
			return nil
		}
		if me == nil {
			me = h.stick(stream, w, timeout)
		}
		select {
		case <-changed:
		case <-deadline.C:
			return &device.TimeoutError{Stream: stream, Word: w, Cmp: cmp, Want: v, Got: atomic.LoadUint32(word), After: timeout,
				Beside: h.timedOut(me)}
		}
	}
}

// handle layout: host id (8 bytes) then base address (8 bytes).
const handleSize = 16

func (h *Host) export(p device.Ptr, owner *Device) ([]byte, error) {
	r, off, err := h.find(p, 0)
	if err != nil {
		return nil, err
	}
	if off != 0 || r.owner != owner || r.freed {
		return nil, fmt.Errorf("sim: export of %v: not the base of an allocation of %s: %w", p, owner.name, device.ErrInvalidArgument)
	}
	b := make([]byte, handleSize)
	binary.LittleEndian.PutUint64(b, h.id)
	binary.LittleEndian.PutUint64(b[8:], r.handle)
	return b, nil
}

// open maps the allocation of handle for device by. A second open of the
// same allocation by the same device, before it closed the first, fails, as
// a second cuIpcOpenMemHandle of one allocation in one context does.
func (h *Host) open(handle []byte, by *Device) (device.Ptr, error) {
	if len(handle) != handleSize {
		return 0, fmt.Errorf("sim: peer handle of %d bytes, want %d: %w", len(handle), handleSize, device.ErrInvalidArgument)
	}
	if id := binary.LittleEndian.Uint64(handle); id != h.id {
		return 0, fmt.Errorf("sim: peer memory is on another host (host %d, this is %d): %w", id, h.id, device.ErrNotSupported)
	}
	p := device.Ptr(binary.LittleEndian.Uint64(handle[8:]))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.regions {
		if r.base == p && !r.freed {
			if r.openers[by] > 0 {
				return 0, fmt.Errorf("sim: peer allocation %v is already mapped on %s (as on CUDA, a device opens an allocation once): %w",
					p, by.name, device.ErrInvalidArgument)
			}
			if r.openers == nil {
				r.openers = map[*Device]int{}
			}
			r.openers[by]++
			r.views++
			live.views.Add(1)
			return p, nil
		}
	}
	return 0, fmt.Errorf("sim: peer allocation %v no longer exists: %w", p, device.ErrPeer)
}

func (h *Host) closeView(p device.Ptr, by *Device) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.regions {
		if r.base == p && r.openers[by] > 0 {
			if r.openers[by]--; r.openers[by] == 0 {
				delete(r.openers, by)
			}
			r.views--
			live.views.Add(-1)
			if r.freed && r.views == 0 {
				h.regions = append(h.regions[:i], h.regions[i+1:]...)
				unreserve(int64(len(r.data)))
			}
			return nil
		}
	}
	return fmt.Errorf("sim: %v is not an open peer view: %w", p, device.ErrInvalidArgument)
}

func (h *Host) free(p device.Ptr, owner *Device) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.regions {
		if r.base == p && r.owner == owner && !r.freed {
			r.freed = true
			live.allocs.Add(-1)
			owner.inUse.Add(-int64(len(r.data)))
			if r.views == 0 {
				h.regions = append(h.regions[:i], h.regions[i+1:]...)
				unreserve(int64(len(r.data)))
			}
			return nil
		}
	}
	return fmt.Errorf("sim: free of %v, which %s did not allocate: %w", p, owner.name, device.ErrInvalidArgument)
}

// Counts is what is alive across all simulated devices of the process.
type Counts struct {
	Devices, Allocs, Views, Streams, Events, Multicasts int64
}

var live struct {
	devices, allocs, views, streams, events, multicasts atomic.Int64
}

// Live reports the simulated resources not yet released. Tests check that it
// is all zero once everything is closed.
func Live() Counts {
	return Counts{
		Devices:    live.devices.Load(),
		Allocs:     live.allocs.Load(),
		Views:      live.views.Load(),
		Streams:    live.streams.Load(),
		Events:     live.events.Load(),
		Multicasts: live.multicasts.Load(),
	}
}

// RunTests runs a package's tests (m is the *testing.M of a TestMain) and
// turns a passing run into a failing one when simulated resources are still
// alive afterwards: tests must close what they open.
//
//	func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }
func RunTests(m interface{ Run() int }) int {
	code := m.Run()
	if live := Live(); code == 0 && live != (Counts{}) {
		fmt.Fprintf(os.Stderr, "leak: simulated resources still alive after all tests: %+v\n", live)
		return 1
	}
	return code
}
