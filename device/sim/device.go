// Package sim is hiercoll's CPU backend: simulated GPUs made of host memory
// and goroutines, with the ordering semantics of CUDA streams.
//
// Each stream is a goroutine that runs its queue in order. A wait-value really
// blocks its stream until another stream (of this or another simulated GPU on
// the same Host) writes the word, and it is bounded: after Options.WaitTimeout
// the stream fails with a *device.TimeoutError that names the stream, the word
// and the value expected. Kernels run as their Go HostFunc, spread over up to
// grid goroutines. Device addresses are checked on every access, so an
// out-of-bounds copy or kernel access fails loudly instead of corrupting.
//
// Several Devices on one Host share an address space, so OpenPeer of a peer's
// handle returns the same address, as CUDA's unified addressing does.
//
// Simulated memory is the process's own heap, so it has a cap, as a GPU's
// memory has a size: HIERCOLL_SIM_MEMORY (EnvMemory, default half the
// machine's memory) bounds what all simulated GPUs of a process hold at once.
package sim

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
)

// Options configure a simulated device.
type Options struct {
	// WaitTimeout bounds every on-stream wait (wait-value, wait-event).
	// Default 30s.
	WaitTimeout time.Duration
	// SMs is what Info reports as the multiprocessor count. Default GOMAXPROCS.
	SMs int
	// MulticastGranularity is what a simulated multicast object's size must
	// be a multiple of. Default DefaultMulticastGranularity.
	MulticastGranularity int64
	// PageBytes is what Info reports as the large page (0: none, as by
	// default).
	PageBytes int64
}

// Device is one simulated GPU.
type Device struct {
	host    *Host
	ordinal int
	name    string
	opts    Options

	mu      sync.Mutex
	closed  bool
	streams atomic.Int64 // serial for stream names
	inUse   atomic.Int64 // bytes of its own allocations not yet freed
}

// MemoryInUse reports the bytes this device's own allocations hold (peer
// views not counted): what a memory bound on one rank limits.
func (d *Device) MemoryInUse() int64 { return d.inUse.Load() }

var _ device.Device = (*Device)(nil)

// New returns simulated GPU number ordinal on host h.
func New(h *Host, ordinal int, opts Options) *Device {
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = 30 * time.Second
	}
	if opts.SMs <= 0 {
		opts.SMs = runtime.GOMAXPROCS(0)
	}
	if opts.MulticastGranularity <= 0 {
		opts.MulticastGranularity = DefaultMulticastGranularity
	}
	live.devices.Add(1)
	return &Device{host: h, ordinal: ordinal, name: fmt.Sprintf("sim:%d@%s", ordinal, h.name), opts: opts}
}

// Name implements device.Device.
func (d *Device) Name() string { return d.name }

// Info implements device.Device.
func (d *Device) Info() device.Info {
	return device.Info{
		Backend:     "sim",
		Ordinal:     d.ordinal,
		Model:       "simulated GPU (CPU backend)",
		SMs:         d.opts.SMs,
		CopyEngines: 1,
		HostID:      d.host.name,
		Multicast:   true, // a simulated multicast object is a list of host buffers (multicast.go)
		PageBytes:   d.opts.PageBytes,
	}
}

// Host returns the simulated machine the device is on.
func (d *Device) Host() *Host { return d.host }

// Alloc implements device.Device.
func (d *Device) Alloc(size int64) (device.Ptr, error) { return d.host.alloc(d, size) }

// Free implements device.Device.
func (d *Device) Free(p device.Ptr) error { return d.host.free(p, d) }

// AddressRange implements device.Device.
func (d *Device) AddressRange(p device.Ptr) (device.Ptr, int64, error) {
	r, _, err := d.host.find(p, 0)
	if err != nil {
		return 0, 0, err
	}
	return r.base, int64(len(r.data)), nil
}

// CopyToDevice implements device.Device (synchronous).
func (d *Device) CopyToDevice(dst device.Ptr, src []byte) error {
	b, err := d.host.Bytes(dst, int64(len(src)))
	if err != nil {
		return err
	}
	copy(b, src)
	d.host.notify()
	return nil
}

// CopyToHost implements device.Device (synchronous).
func (d *Device) CopyToHost(dst []byte, src device.Ptr) error {
	b, err := d.host.Bytes(src, int64(len(dst)))
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

// ExportMem implements device.Device.
func (d *Device) ExportMem(p device.Ptr) ([]byte, error) { return d.host.export(p, d) }

// OpenPeer implements device.Device.
func (d *Device) OpenPeer(handle []byte) (device.Ptr, error) { return d.host.open(handle, d) }

// ClosePeer implements device.Device.
func (d *Device) ClosePeer(p device.Ptr) error { return d.host.closeView(p, d) }

// NewStream implements device.Device. Priorities are accepted and ignored:
// goroutines have none.
func (d *Device) NewStream(p device.Priority) (device.Stream, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	kind := "stream"
	if p == device.High {
		kind = "stream(high)"
	}
	return newStream(d, fmt.Sprintf("%s %s %d", d.name, kind, d.streams.Add(1))), nil
}

// StreamFromHandle implements device.Device: the CPU backend has no foreign
// streams.
func (d *Device) StreamFromHandle(uintptr) (device.Stream, error) {
	return nil, fmt.Errorf("sim: streams from native handles: %w", device.ErrNotSupported)
}

// NewEvent implements device.Device.
func (d *Device) NewEvent() (device.Event, error) { return d.newEvent(false) }

// NewTimedEvent implements device.Device.
func (d *Device) NewTimedEvent() (device.Event, error) { return d.newEvent(true) }

func (d *Device) newEvent(timed bool) (device.Event, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	live.events.Add(1)
	return &event{dev: d, timed: timed}, nil
}

func (d *Device) live() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: %s: %w", d.name, device.ErrClosed)
	}
	return nil
}

func (d *Device) own(s device.Stream) (*stream, error) {
	st, ok := s.(*stream)
	if !ok || st == nil {
		return nil, fmt.Errorf("sim: %s: stream of another backend (%T): %w", d.name, s, device.ErrInvalidArgument)
	}
	if st.dev != d {
		return nil, fmt.Errorf("sim: %s: stream %s belongs to another device: %w", d.name, st.name, device.ErrInvalidArgument)
	}
	return st, nil
}

// Copy implements device.Device. Bounds are checked when the copy runs, as
// the addresses may be written before then.
func (d *Device) Copy(s device.Stream, dst, src device.Ptr, n int64) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("sim: copy of %d bytes: %w", n, device.ErrInvalidArgument)
	}
	if n == 0 {
		return nil
	}
	return st.enqueue(op{run: func() error {
		to, err := d.host.Bytes(dst, n)
		if err != nil {
			return fmt.Errorf("copy to %v: %w", dst, err)
		}
		from, err := d.host.Bytes(src, n)
		if err != nil {
			return fmt.Errorf("copy from %v: %w", src, err)
		}
		copy(to, from)
		d.host.notify()
		return nil
	}})
}

// Memset32 implements device.Device. Each word is stored atomically, as the
// words it sets are often signals that other streams poll.
func (d *Device) Memset32(s device.Stream, dst device.Ptr, v uint32, count int64) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if dst%4 != 0 || count < 0 {
		return fmt.Errorf("sim: memset32 of %d words at %v: %w", count, dst, device.ErrInvalidArgument)
	}
	return st.enqueue(op{run: func() error {
		b, err := d.host.Bytes(dst, 4*count)
		if err != nil {
			return fmt.Errorf("memset32: %w", err)
		}
		for i := int64(0); i < count; i++ {
			atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[4*i])), v)
		}
		d.host.notify()
		return nil
	}})
}

// WaitValue32 implements device.Device.
func (d *Device) WaitValue32(s device.Stream, w device.Word, cmp device.Cmp, v uint32) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if cmp != device.EQ && cmp != device.GEQ {
		return fmt.Errorf("sim: wait-value comparison %v: %w", cmp, device.ErrNotSupported)
	}
	timeout := d.opts.WaitTimeout
	return st.enqueue(op{run: func() error { return d.host.wait(st.name, timeout, w, cmp, v) }})
}

// kernelMemory is what a host kernel sees: the host's memory and its signal
// operations, with waits bounded like the launching stream's.
type kernelMemory struct {
	*Host
	stream  string
	timeout time.Duration
}

func (m *kernelMemory) Store32(p device.Ptr, v uint32) error {
	word, err := m.word(p)
	if err != nil {
		return err
	}
	atomic.StoreUint32(word, v)
	m.notify()
	return nil
}

func (m *kernelMemory) Add32(p device.Ptr, v uint32) error {
	word, err := m.word(p)
	if err != nil {
		return err
	}
	atomic.AddUint32(word, v)
	m.notify()
	return nil
}

func (m *kernelMemory) Wait32(w device.Word, cmp device.Cmp, v uint32) error {
	return m.wait(m.stream+" (in a kernel)", m.timeout, w, cmp, v)
}

func (m *kernelMemory) Wait32Or(w device.Word, cmp device.Cmp, v uint32, abort device.Ptr) error {
	return m.waitOr(m.stream+" (in a kernel)", m.timeout, w, cmp, v, abort)
}

// WriteValue32 implements device.Device.
func (d *Device) WriteValue32(s device.Stream, addr device.Ptr, v uint32) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	return st.enqueue(op{run: func() error {
		word, err := d.host.word(addr)
		if err != nil {
			return fmt.Errorf("write-value: %w", err)
		}
		atomic.StoreUint32(word, v)
		d.host.notify()
		return nil
	}})
}

// Prepare implements device.Device: there is nothing to load, only a host
// implementation to find.
func (d *Device) Prepare(k *device.Kernel) error {
	if k == nil || k.Host == nil {
		return fmt.Errorf("sim: kernel without a host implementation: %w", device.ErrNotSupported)
	}
	return nil
}

// Launch implements device.Device by running the kernel's HostFunc.
func (d *Device) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if k == nil || k.Host == nil {
		return fmt.Errorf("sim: kernel without a host implementation: %w", device.ErrNotSupported)
	}
	if grid <= 0 {
		return fmt.Errorf("sim: kernel %s with grid %d: %w", k.Name, grid, device.ErrInvalidArgument)
	}
	if err := device.CheckArgs(k, args); err != nil {
		return err
	}
	args = append([]any(nil), args...)
	mem := &kernelMemory{Host: d.host, stream: st.name, timeout: d.opts.WaitTimeout}
	return st.enqueue(op{run: func() error {
		if err := k.Host(mem, grid, args); err != nil {
			return fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		d.host.notify()
		return nil
	}})
}

// Close implements device.Device.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		live.devices.Add(-1)
	}
	return nil
}
