package symm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// Window is a caller's device buffer registered on every rank of a job (as
// NCCL's ncclCommRegister): each rank's [p, p+size) and the same-host peers'
// buffers as mapped here, through the IPC handles of the allocations that
// hold them. The buffers need not be symmetric memory: each may lie anywhere
// in an allocation of its rank's (PyTorch's caching allocator carves tensors
// out of large segments), only their sizes must be equal.
//
// A device maps one peer allocation once (CUDA refuses a second
// cuIpcOpenMemHandle of it in one context), and two registered buffers may
// lie in one allocation: the mappings are shared, per device, by every
// Window and Heap of the process, and unmapped with their last user.
type Window struct {
	dev    device.Device
	rank   int
	size   int64
	local  device.Ptr
	peers  []device.Ptr // by global rank; 0 where the peer is on another host
	maps   []*mapping   // the peer mappings this window holds
	closed bool
}

// NewWindow registers this rank's buffer [p, p+size) on dev with every rank
// of comm and maps the same-host peers' buffers. It is collective: every
// rank calls it with a buffer of the same size (else every rank fails with
// ErrInvalidArgument naming the sizes). If any rank fails, every rank
// returns an error naming it and nothing stays mapped.
func NewWindow(ctx context.Context, comm bootstrap.Comm, dev device.Device, p device.Ptr, size int64) (*Window, error) {
	w := &Window{dev: dev, rank: comm.Rank(), size: size, local: p, peers: make([]device.Ptr, comm.Size())}

	// Phase 1: find the allocation holding the buffer, export it.
	var me windowInfo
	localErr := func() error {
		if p == 0 || size <= 0 {
			return fmt.Errorf("symm: rank %d: registering %d bytes at %v: %w", w.rank, size, p, device.ErrInvalidArgument)
		}
		base, allocSize, err := dev.AddressRange(p)
		if err != nil {
			return fmt.Errorf("symm: rank %d: registering %v: not device memory: %w", w.rank, p, err)
		}
		off := int64(p - base)
		if allocSize-off < size {
			return fmt.Errorf("symm: rank %d: registering %d bytes at %v, but its allocation (%d bytes at %v) has %d left: %w",
				w.rank, size, p, allocSize, base, allocSize-off, device.ErrInvalidArgument)
		}
		handle, err := dev.ExportMem(base)
		if err != nil {
			return fmt.Errorf("symm: rank %d: registering %v: exporting its allocation at %v: %w", w.rank, p, base, err)
		}
		me.handle, me.off = handle, off
		return nil
	}()
	me.host, me.size, me.failed = dev.Info().HostID, size, localErr != nil
	release := func() { _ = w.release() }
	open := func(infos []windowInfo) error { return w.open(infos, me) }
	if err := setUp(ctx, comm, "registered buffer", me, localErr, decodeWindowInfo, open, release); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Window) open(infos []windowInfo, me windowInfo) error {
	for r, in := range infos {
		if in.failed {
			return fmt.Errorf("symm: rank %d could not register its buffer: %w", r, device.ErrPeer)
		}
	}
	if sizes := sizesBy(infos); len(sizes) > 1 {
		return fmt.Errorf("symm: rank %d: the ranks register buffers of different sizes (%s); every rank must register the same size: %w",
			w.rank, strings.Join(sizes, ", "), device.ErrInvalidArgument)
	}
	for r, in := range infos {
		if r == w.rank {
			w.peers[r] = w.local
			continue
		}
		if in.host != me.host {
			continue
		}
		m, err := openMapping(w.dev, in.handle)
		if err != nil {
			return fmt.Errorf("symm: rank %d: mapping the registered buffer of rank %d: %w", w.rank, r, err)
		}
		w.maps = append(w.maps, m)
		w.peers[r] = m.base.Add(in.off)
	}
	return nil
}

// sizesBy names the distinct sizes of infos with their ranks: "4096 bytes
// on ranks [0 2]".
func sizesBy(infos []windowInfo) []string {
	ranks := map[int64][]int{}
	for r, in := range infos {
		ranks[in.size] = append(ranks[in.size], r)
	}
	var out []string
	for size, rs := range ranks {
		out = append(out, fmt.Sprintf("%d bytes on ranks %v", size, rs))
	}
	sort.Strings(out)
	return out
}

// Local is this rank's registered buffer.
func (w *Window) Local() device.Ptr { return w.local }

// Size is the bytes of every rank's buffer.
func (w *Window) Size() int64 { return w.size }

// Peer returns rank's buffer as seen from here, and whether it is mapped (it
// is not when rank is on another host).
func (w *Window) Peer(rank int) (device.Ptr, bool) {
	if rank < 0 || rank >= len(w.peers) {
		return 0, false
	}
	p := w.peers[rank]
	return p, p != 0
}

// Close unmaps the peers' buffers (a mapping shared with another Window or
// Heap stays until its last user closes). It is local; the caller makes
// sure no work still reads through the window.
func (w *Window) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.release()
}

func (w *Window) release() error {
	var errs []error
	for _, m := range w.maps {
		errs = append(errs, m.close())
	}
	w.maps = nil
	clear(w.peers)
	return errors.Join(errs...)
}

// windowInfo is what each rank tells the others about its registered buffer.
type windowInfo struct {
	host   string
	handle []byte
	off    int64 // of the buffer in its allocation
	size   int64
	failed bool
}

func (p windowInfo) encode() []byte {
	return record(nil).bytes([]byte(p.host)).bytes(p.handle).word(p.off).word(p.size).flag(p.failed)
}

func decodeWindowInfo(b []byte) (windowInfo, error) {
	r := newReader(b)
	p := windowInfo{host: string(r.bytes()), handle: r.bytes(), off: r.word(), size: r.word(), failed: r.flag()}
	return p, r.err()
}

// mapping is a peer allocation mapped on one device, shared by its users.
type mapping struct {
	key  mappingKey
	dev  device.Device
	base device.Ptr
	refs int // users; guarded by mappings.mu
}

type mappingKey struct {
	dev    device.Device
	handle string
}

// mappings are the peer allocations mapped in this process, by device and
// handle.
var mappings = struct {
	mu sync.Mutex
	by map[mappingKey]*mapping
}{by: map[mappingKey]*mapping{}}

// openMapping maps the allocation of handle on dev, or takes one more
// reference to its mapping. A device whose type cannot key a map (a
// wrapper struct of non-comparable fields) gets a mapping of its own.
func openMapping(dev device.Device, handle []byte) (*mapping, error) {
	if t := reflect.TypeOf(dev); !t.Comparable() {
		p, err := dev.OpenPeer(handle)
		if err != nil {
			return nil, err
		}
		return &mapping{dev: dev, base: p, refs: 1}, nil
	}
	key := mappingKey{dev: dev, handle: string(handle)}
	mappings.mu.Lock()
	defer mappings.mu.Unlock()
	if m, ok := mappings.by[key]; ok {
		m.refs++
		return m, nil
	}
	p, err := dev.OpenPeer(handle)
	if err != nil {
		return nil, err
	}
	m := &mapping{key: key, dev: dev, base: p, refs: 1}
	mappings.by[key] = m
	return m, nil
}

// close drops one reference; the last unmaps.
func (m *mapping) close() error {
	mappings.mu.Lock()
	defer mappings.mu.Unlock()
	if m.refs <= 0 {
		return nil
	}
	if m.refs--; m.refs > 0 {
		return nil
	}
	if m.key.dev != nil {
		delete(mappings.by, m.key)
	}
	return m.dev.ClosePeer(m.base)
}

// MappedPeers is how many peer allocations are mapped through the shared
// mappings of this process (for tests: 0 once everything is closed).
func MappedPeers() int {
	mappings.mu.Lock()
	defer mappings.mu.Unlock()
	return len(mappings.by)
}
