package sim

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/seed12530e24/hiercoll/device"
)

// Simulated NVLink multicast: an object is the list of the buffers its
// devices bound, kept by the Host; a mapping of it is an address range of
// the host's address space that only Multimem reads (any plain access there
// fails, as a plain load of a multicast address is undefined on a GPU). The
// rules a driver and the hardware enforce are enforced here too: a size that
// is a multiple of the granularity, every device added before any binds, a
// load-reduce only once every device is bound, on aligned addresses.

// DefaultMulticastGranularity is the simulated objects' granularity (GPUs
// have 2 MiB or more; a small one keeps simulated worlds small).
const DefaultMulticastGranularity = 4096

// mcObject is one simulated multicast object.
type mcObject struct {
	id      uint64
	devices int
	size    int64
	added   []*Device
	bound   map[*Device]*region
	refs    int // handles (Multicast values) not yet closed
}

// mcMapping is one device's mapping of an object.
type mcMapping struct {
	base device.Ptr
	obj  *mcObject
}

var _ device.Multicaster = (*Device)(nil)
var _ device.MulticastMemory = (*kernelMemory)(nil)

// MulticastGranularity implements device.Multicaster.
func (d *Device) MulticastGranularity(p device.Permit, devices int) (int64, error) {
	if err := p.Check(d); err != nil {
		return 0, err
	}
	if devices < 1 {
		return 0, fmt.Errorf("sim: multicast granularity for %d devices: %w", devices, device.ErrInvalidArgument)
	}
	return d.opts.MulticastGranularity, nil
}

// CreateMulticast implements device.Multicaster.
func (d *Device) CreateMulticast(p device.Permit, devices int, size int64) (device.Multicast, error) {
	if err := p.Check(d); err != nil {
		return nil, err
	}
	g := d.opts.MulticastGranularity
	if devices < 1 || size <= 0 || size%g != 0 {
		return nil, fmt.Errorf("sim: multicast object of %d bytes for %d devices: the size must be a positive multiple of the granularity %d: %w",
			size, devices, g, device.ErrInvalidArgument)
	}
	h := d.host
	h.mcMu.Lock()
	defer h.mcMu.Unlock()
	h.mcNext++
	obj := &mcObject{id: h.mcNext, devices: devices, size: size, bound: map[*Device]*region{}}
	h.mcObjects[obj.id] = obj
	return d.hold(obj), nil
}

// ImportMulticast implements device.Multicaster.
func (d *Device) ImportMulticast(p device.Permit, handle []byte) (device.Multicast, error) {
	if err := p.Check(d); err != nil {
		return nil, err
	}
	if len(handle) != 16 {
		return nil, fmt.Errorf("sim: multicast handle of %d bytes, want 16: %w", len(handle), device.ErrInvalidArgument)
	}
	h := d.host
	if id := binary.LittleEndian.Uint64(handle); id != h.id {
		return nil, fmt.Errorf("sim: the multicast object is on another host (host %d, this is %d): %w", id, h.id, device.ErrNotSupported)
	}
	h.mcMu.Lock()
	defer h.mcMu.Unlock()
	obj, ok := h.mcObjects[binary.LittleEndian.Uint64(handle[8:])]
	if !ok {
		return nil, fmt.Errorf("sim: multicast object %d no longer exists: %w", binary.LittleEndian.Uint64(handle[8:]), device.ErrPeer)
	}
	return d.hold(obj), nil
}

// hold returns a new handle on obj for d. Call with h.mcMu held.
func (d *Device) hold(obj *mcObject) *multicast {
	obj.refs++
	live.multicasts.Add(1)
	return &multicast{dev: d, obj: obj}
}

// multicast is one device's handle on an object.
type multicast struct {
	dev    *Device
	obj    *mcObject
	added  bool
	local  device.Ptr // the bound memory
	mapped device.Ptr
	closed bool
}

func (m *multicast) Size() int64 { return m.obj.size }

func (m *multicast) Export() ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, m.dev.host.id)
	return binary.LittleEndian.AppendUint64(b, m.obj.id), nil
}

func (m *multicast) AddDevice() error {
	h := m.dev.host
	h.mcMu.Lock()
	defer h.mcMu.Unlock()
	o := m.obj
	switch {
	case m.closed:
		return fmt.Errorf("sim: multicast object %d: %w", o.id, device.ErrClosed)
	case m.added:
		return fmt.Errorf("sim: %s is already in multicast object %d: %w", m.dev.name, o.id, device.ErrInvalidArgument)
	case len(o.bound) > 0:
		return fmt.Errorf("sim: adding %s to multicast object %d after memory was bound (add every device first): %w", m.dev.name, o.id, device.ErrInvalidArgument)
	case len(o.added) == o.devices:
		return fmt.Errorf("sim: multicast object %d was made for %d devices, all added: %w", o.id, o.devices, device.ErrInvalidArgument)
	}
	o.added = append(o.added, m.dev)
	m.added = true
	return nil
}

func (m *multicast) Bind() (device.Ptr, error) {
	h := m.dev.host
	h.mcMu.Lock()
	o := m.obj
	var err error
	switch {
	case m.closed:
		err = fmt.Errorf("sim: multicast object %d: %w", o.id, device.ErrClosed)
	case !m.added:
		err = fmt.Errorf("sim: binding memory of %s, which is not in multicast object %d: %w", m.dev.name, o.id, device.ErrInvalidArgument)
	case len(o.added) < o.devices:
		err = fmt.Errorf("sim: binding to multicast object %d with %d of its %d devices added (add every device first): %w",
			o.id, len(o.added), o.devices, device.ErrInvalidArgument)
	case m.local != 0:
		err = fmt.Errorf("sim: %s already bound memory to multicast object %d: %w", m.dev.name, o.id, device.ErrInvalidArgument)
	}
	h.mcMu.Unlock()
	if err != nil {
		return 0, err
	}
	p, err := h.alloc(m.dev, o.size)
	if err != nil {
		return 0, err
	}
	r, _, err := h.find(p, 0)
	if err != nil {
		return 0, err
	}
	h.mcMu.Lock()
	o.bound[m.dev] = r
	h.mcMu.Unlock()
	m.local = p
	return p, nil
}

func (m *multicast) Map() (device.Ptr, error) {
	h := m.dev.host
	if m.closed {
		return 0, fmt.Errorf("sim: multicast object %d: %w", m.obj.id, device.ErrClosed)
	}
	if m.mapped != 0 {
		return 0, fmt.Errorf("sim: multicast object %d is already mapped on %s: %w", m.obj.id, m.dev.name, device.ErrInvalidArgument)
	}
	base := h.reserve(m.obj.size)
	h.mcMu.Lock()
	h.mcMaps = append(h.mcMaps, &mcMapping{base: base, obj: m.obj})
	h.mcMu.Unlock()
	m.mapped = base
	return base, nil
}

func (m *multicast) Close() error {
	h := m.dev.host
	if m.closed {
		return nil
	}
	m.closed = true
	h.mcMu.Lock()
	o := m.obj
	if m.mapped != 0 {
		for i, mp := range h.mcMaps {
			if mp.base == m.mapped {
				h.mcMaps = append(h.mcMaps[:i], h.mcMaps[i+1:]...)
				break
			}
		}
	}
	delete(o.bound, m.dev)
	if o.refs--; o.refs == 0 {
		delete(h.mcObjects, o.id)
	}
	h.mcMu.Unlock()
	live.multicasts.Add(-1)
	if m.local != 0 {
		return h.free(m.local, m.dev)
	}
	return nil
}

// Multimem implements device.MulticastMemory for kernels.
func (h *Host) Multimem(p device.Ptr, n, align int64) ([][]byte, error) {
	if align <= 0 || uint64(p)%uint64(align) != 0 {
		return nil, fmt.Errorf("sim: multimem access at %v is not %d-byte aligned: %w", p, align, device.ErrInvalidArgument)
	}
	h.mcMu.Lock()
	defer h.mcMu.Unlock()
	mp := h.mcMapping(p)
	if mp == nil {
		return nil, fmt.Errorf("sim: multimem access at %v, which is not a multicast address: %w", p, device.ErrInvalidArgument)
	}
	o := mp.obj
	off := int64(p - mp.base)
	if n < 0 || off+n > o.size {
		return nil, fmt.Errorf("sim: multimem access of %d bytes at offset %d runs past the end of the %d-byte multicast object: %w",
			n, off, o.size, device.ErrInvalidArgument)
	}
	added := slices.SortedFunc(slices.Values(o.added), func(a, b *Device) int { return a.ordinal - b.ordinal })
	views := make([][]byte, len(added))
	for i, d := range added {
		r, ok := o.bound[d]
		if !ok {
			return nil, fmt.Errorf("sim: multimem access to multicast object %d, to which %s has no memory bound: %w", o.id, d.name, device.ErrInvalidArgument)
		}
		views[i] = r.data[off : off+n : off+n]
	}
	if len(views) < o.devices {
		return nil, fmt.Errorf("sim: multimem access to multicast object %d with %d of its %d devices added: %w", o.id, len(views), o.devices, device.ErrInvalidArgument)
	}
	return views, nil
}

// mcMapping returns the multicast mapping containing p, or nil. Call with
// h.mcMu held.
func (h *Host) mcMapping(p device.Ptr) *mcMapping {
	for _, mp := range h.mcMaps {
		if p >= mp.base && int64(p-mp.base) < mp.obj.size {
			return mp
		}
	}
	return nil
}

// isMulticast reports whether p lies in a multicast mapping.
func (h *Host) isMulticast(p device.Ptr) bool {
	h.mcMu.Lock()
	defer h.mcMu.Unlock()
	return h.mcMapping(p) != nil
}
