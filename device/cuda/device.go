package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// Options configure Open.
type Options struct {
	// KernelCacheDir is where compiled kernels are kept between processes.
	// Default $HIERCOLL_CACHE_DIR, else $XDG_CACHE_HOME/hiercoll, else
	// ~/.cache/hiercoll.
	KernelCacheDir string
}

// LiveCounts is what a Device has handed out and not yet had back. Tests
// check that Allocs, Views, Streams and Events return to zero; Modules are
// the device's own and go at Close.
type LiveCounts struct {
	Allocs  int // from Alloc, not yet Freed
	Views   int // peer mappings from OpenPeer, not yet ClosePeer'd
	Streams int // from NewStream, not yet Closed (wrappers from StreamFromHandle are not counted)
	Events  int // from NewEvent, not yet Closed
	Modules int // kernel modules loaded on the device
	// Multicasts are multicast objects created or imported (multicast.go),
	// not yet Closed.
	Multicasts int
}

// CacheStats reports how the device obtained its kernel modules.
type CacheStats struct {
	Dir      string // the disk cache ("" when there is none)
	Hits     int    // modules whose CUBIN came from the disk cache
	Compiles int    // modules compiled with NVRTC
}

// hostCopyTimeout bounds CopyToDevice and CopyToHost of n bytes, which have
// no context: they run on the device's own transfer stream, which waits on
// nothing, so only a broken (or falsely serialized) device reaches it. It
// allows 30 s plus 1 s per GB, far beyond any PCIe transfer.
func hostCopyTimeout(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*time.Nanosecond
}

// Device is one GPU driven through the CUDA driver API, in the device's
// primary context (the one PyTorch and NCCL in the same process use).
type Device struct {
	drv     api
	ordinal int
	dev     int     // CUdevice
	ctx     uintptr // the primary CUcontext, retained by Open
	name    string
	info    device.Info
	arch    string // "sm_90"
	cache   diskCache

	prioLeast, prioGreatest int

	closed  atomic.Bool
	serial  atomic.Int64 // stream names
	streams atomic.Int64
	events  atomic.Int64

	multicasts atomic.Int64

	mu     sync.Mutex
	allocs map[device.Ptr]int64
	views  map[device.Ptr]int // an IPC mapping may be opened more than once

	xferMu sync.Mutex
	xfer   uintptr // non-blocking stream of CopyToDevice / CopyToHost

	mods moduleSet
}

var _ device.Device = (*Device)(nil)

// Open opens GPU number ordinal (as the driver numbers them, after
// CUDA_VISIBLE_DEVICES) and retains its primary context. Without a usable
// driver the error wraps device.ErrNotSupported.
func Open(ordinal int, opts Options) (*Device, error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	return open(drv, ordinal, opts)
}

// Count returns the number of GPUs the driver sees. Without a driver the
// error wraps device.ErrNotSupported.
func Count() (int, error) {
	drv, err := loadDriver()
	if err != nil {
		return 0, err
	}
	n, r := drv.deviceCount()
	if r == cudaErrorNoDevice {
		return 0, nil
	}
	if err := check(drv, r, "cuDeviceGetCount"); err != nil {
		return 0, err
	}
	return n, nil
}

func open(drv api, ordinal int, opts Options) (*Device, error) {
	n, r := drv.deviceCount()
	if err := check(drv, r, "cuDeviceGetCount"); err != nil {
		return nil, fmt.Errorf("cuda: open device %d: %w", ordinal, err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: open device %d: the driver sees %d device(s): %w", ordinal, n, device.ErrInvalidArgument)
	}
	dev, r := drv.deviceGet(ordinal)
	if err := check(drv, r, "cuDeviceGet(%d)", ordinal); err != nil {
		return nil, err
	}
	model, r := drv.deviceName(dev)
	if err := check(drv, r, "cuDeviceGetName(%d)", dev); err != nil {
		return nil, err
	}
	at, err := readAttributes(drv, dev, ordinal, model)
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	if opts.KernelCacheDir == "" {
		opts.KernelCacheDir = defaultCacheDir()
	}

	ctx, r := drv.primaryCtxRetain(dev)
	if err := check(drv, r, "cuDevicePrimaryCtxRetain(%d)", dev); err != nil {
		return nil, err
	}
	d := &Device{
		drv:     drv,
		ordinal: ordinal,
		dev:     dev,
		ctx:     ctx,
		name:    fmt.Sprintf("cuda:%d (%s)", ordinal, model),
		arch:    fmt.Sprintf("sm_%d%d", at.major, at.minor),
		cache:   diskCache{dir: opts.KernelCacheDir},
		allocs:  make(map[device.Ptr]int64),
		views:   make(map[device.Ptr]int),
		info: device.Info{
			Backend:     "cuda",
			Ordinal:     ordinal,
			Model:       model,
			SMs:         at.sms,
			CopyEngines: at.engines,
			HostID:      host,
			Multicast:   at.multicast == 1,
			PageBytes:   largePage,
		},
	}
	d.mods.init()
	if err := d.initStreams(); err != nil {
		drv.primaryCtxRelease(dev)
		return nil, err
	}
	return d, nil
}

// deviceAttrs are the attributes open reads from the driver.
type deviceAttrs struct {
	sms, engines, major, minor, multicast int
}

// readAttributes reads device dev's attributes, rejecting a device without
// unified addressing.
func readAttributes(drv api, dev, ordinal int, model string) (deviceAttrs, error) {
	attr := func(id int, what string) (int, error) {
		v, r := drv.deviceAttribute(dev, id)
		return v, check(drv, r, "cuDeviceGetAttribute(%s=%d, device %d)", what, id, dev)
	}
	var errs []error
	get := func(id int, what string) int {
		v, err := attr(id, what)
		errs = append(errs, err)
		return v
	}
	sms := get(attrMultiprocessorCount, "MULTIPROCESSOR_COUNT")
	engines := get(attrAsyncEngineCount, "ASYNC_ENGINE_COUNT")
	major := get(attrComputeCapabilityMajor, "COMPUTE_CAPABILITY_MAJOR")
	minor := get(attrComputeCapabilityMinor, "COMPUTE_CAPABILITY_MINOR")
	uva := get(attrUnifiedAddressing, "UNIFIED_ADDRESSING")
	if err := errors.Join(errs...); err != nil {
		return deviceAttrs{}, err
	}
	if uva != 1 {
		return deviceAttrs{}, fmt.Errorf("cuda: device %d (%s) has no unified addressing, which peer views and copies rely on: %w",
			ordinal, model, device.ErrNotSupported)
	}
	// Multicast is reported, never used here; an older driver that does not
	// know the attribute simply reports none.
	multicast, _ := attr(attrMulticastSupported, "MULTICAST_SUPPORTED")
	return deviceAttrs{sms: sms, engines: engines, major: major, minor: minor, multicast: multicast}, nil
}

// initStreams reads the context's stream priority range and creates the
// transfer stream at the least priority.
func (d *Device) initStreams() error {
	least, greatest, r := d.drv.streamPriorityRange(d.ctx)
	if err := check(d.drv, r, "cuCtxGetStreamPriorityRange"); err != nil {
		return err
	}
	d.prioLeast, d.prioGreatest = least, greatest
	xfer, r := d.drv.streamCreateWithPriority(d.ctx, streamNonBlocking, least)
	if err := check(d.drv, r, "cuStreamCreateWithPriority(NON_BLOCKING, %d)", least); err != nil {
		return err
	}
	d.xfer = xfer
	return nil
}

// Name implements device.Device: "cuda:0 (NVIDIA H200)".
func (d *Device) Name() string { return d.name }

// Info implements device.Device.
func (d *Device) Info() device.Info { return d.info }

// Arch is the architecture kernels are compiled for: "sm_90".
func (d *Device) Arch() string { return d.arch }

// Context is the native CUcontext (the device's primary context).
func (d *Device) Context() uintptr { return d.ctx }

// Live reports what the device has handed out and not had back.
func (d *Device) Live() LiveCounts {
	d.mu.Lock()
	allocs := len(d.allocs)
	views := 0
	for _, n := range d.views {
		views += n
	}
	d.mu.Unlock()
	return LiveCounts{
		Allocs:     allocs,
		Views:      views,
		Streams:    int(d.streams.Load()),
		Events:     int(d.events.Load()),
		Modules:    d.mods.count(),
		Multicasts: int(d.multicasts.Load()),
	}
}

func (d *Device) check(r result, format string, args ...any) error {
	return check(d.drv, r, format, args...)
}

func (d *Device) live() error {
	if d.closed.Load() {
		return fmt.Errorf("cuda: %s: %w", d.name, device.ErrClosed)
	}
	return nil
}

// largePage is the page of large allocations on the GPUs this backend
// targets (Hopper: 2 MiB, the granularity cuMemGetAllocationGranularity
// recommends there).
const largePage = 2 << 20

// Alloc implements device.Device with cuMemAlloc_v2 (256-byte aligned).
func (d *Device) Alloc(size int64) (device.Ptr, error) {
	if err := d.live(); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("cuda: %s: alloc of %d bytes: %w", d.name, size, device.ErrInvalidArgument)
	}
	p, r := d.drv.memAlloc(d.ctx, size)
	if err := d.check(r, "cuMemAlloc_v2(%d)", size); err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.allocs[p] = size
	d.mu.Unlock()
	return p, nil
}

// Free implements device.Device with cuMemFree_v2. Like every cuMemFree it
// waits for the device to finish work that may use the memory: free memory
// only after the streams using it have been synchronized.
func (d *Device) Free(p device.Ptr) error {
	if err := d.live(); err != nil {
		return err
	}
	d.mu.Lock()
	_, ok := d.allocs[p]
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: %s: free of %v, which this device did not allocate: %w", d.name, p, device.ErrInvalidArgument)
	}
	if err := d.check(d.drv.memFree(d.ctx, p), "cuMemFree_v2(%v)", p); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.allocs, p)
	d.mu.Unlock()
	return nil
}

// AddressRange implements device.Device with cuMemGetAddressRange_v2; it
// works for peer views too.
func (d *Device) AddressRange(p device.Ptr) (device.Ptr, int64, error) {
	if err := d.live(); err != nil {
		return 0, 0, err
	}
	base, size, r := d.drv.memAddressRange(d.ctx, p)
	if err := d.check(r, "cuMemGetAddressRange_v2(%v)", p); err != nil {
		return 0, 0, err
	}
	return base, size, nil
}

// CopyToDevice implements device.Device: cuMemcpyHtoDAsync_v2 on the
// device's own non-blocking transfer stream, then a poll of that stream, so
// the data is in device memory when it returns (a plain cuMemcpyHtoD_v2 from
// pageable memory may return before its DMA lands, and it synchronizes with
// the legacy default stream, which streams of other libraries may hold up).
func (d *Device) CopyToDevice(dst device.Ptr, src []byte) error {
	if err := d.live(); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	d.xferMu.Lock()
	defer d.xferMu.Unlock()
	r := d.drv.memcpyHtoDAsync(d.ctx, dst, src, d.xfer)
	if err := d.check(r, "cuMemcpyHtoDAsync_v2(%v, %d bytes)", dst, len(src)); err != nil {
		return err
	}
	err := d.drainTransfers("copy to device", len(src))
	runtime.KeepAlive(src) // the driver stages pageable memory before returning; belt and braces
	return err
}

// CopyToHost implements device.Device: cuMemcpyDtoHAsync_v2 on the
// transfer stream (to pageable memory it returns once the copy is done) and
// a poll of the stream. It does not wait for work on other streams.
func (d *Device) CopyToHost(dst []byte, src device.Ptr) error {
	if err := d.live(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	d.xferMu.Lock()
	defer d.xferMu.Unlock()
	r := d.drv.memcpyDtoHAsync(d.ctx, dst, src, d.xfer)
	if err := d.check(r, "cuMemcpyDtoHAsync_v2(%v, %d bytes)", src, len(dst)); err != nil {
		return err
	}
	err := d.drainTransfers("copy to host", len(dst))
	runtime.KeepAlive(dst)
	return err
}

// drainTransfers polls the transfer stream until it is idle.
func (d *Device) drainTransfers(what string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), hostCopyTimeout(n))
	defer cancel()
	return waitDone(ctx, d.name+" transfer stream", what, func() (bool, error) {
		return d.queryStream(d.xfer)
	})
}

func (d *Device) queryStream(h uintptr) (bool, error) {
	switch r := d.drv.streamQuery(d.ctx, h); r {
	case cudaSuccess:
		return true, nil
	case cudaErrorNotReady:
		return false, nil
	default:
		return false, d.check(r, "cuStreamQuery")
	}
}

// ExportMem implements device.Device with cuIpcGetMemHandle: a 64-byte
// handle another process on this host opens with OpenPeer. p must be the
// base of an allocation of this context: one of this device's, or one made
// by another library in the same context (PyTorch's caching allocator), as
// cuMemGetAddressRange_v2 reports it. cuIpcGetMemHandle refuses memory from
// cuMemCreate (VMM, PyTorch's expandable segments): that error says so.
func (d *Device) ExportMem(p device.Ptr) ([]byte, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	_, own := d.allocs[p]
	d.mu.Unlock()
	if !own {
		base, size, r := d.drv.memAddressRange(d.ctx, p)
		if err := d.check(r, "cuMemGetAddressRange_v2(%v)", p); err != nil {
			return nil, fmt.Errorf("cuda: %s: export of %v: not device memory of this context: %w (%w)", d.name, p, err, device.ErrInvalidArgument)
		}
		if base != p {
			return nil, fmt.Errorf("cuda: %s: export of %v: not the base of an allocation (it lies %d bytes into the %d-byte allocation at %v): %w",
				d.name, p, p-base, size, base, device.ErrInvalidArgument)
		}
	}
	h, r := d.drv.ipcGetMemHandle(d.ctx, p)
	if err := d.check(r, "cuIpcGetMemHandle(%v)", p); err != nil {
		if own {
			return nil, err
		}
		return nil, fmt.Errorf("cuda: %s: export of %v: this allocation has no IPC handle (allocated with cuMemCreate / expandable segments? "+
			"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True makes such memory), so it cannot be registered; "+
			"calls with it unregistered still work: %w (%w)", d.name, p, err, device.ErrNotSupported)
	}
	return h[:], nil
}

// OpenPeer implements device.Device with cuIpcOpenMemHandle_v2
// (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS). CUDA refuses handles exported by the
// same process.
func (d *Device) OpenPeer(handle []byte) (device.Ptr, error) {
	if err := d.live(); err != nil {
		return 0, err
	}
	if len(handle) != ipcHandleSize {
		return 0, fmt.Errorf("cuda: %s: peer handle of %d bytes, want %d: %w", d.name, len(handle), ipcHandleSize, device.ErrInvalidArgument)
	}
	var h [ipcHandleSize]byte
	copy(h[:], handle)
	p, r := d.drv.ipcOpenMemHandle(d.ctx, h, ipcMemLazyEnablePeer)
	if err := d.check(r, "cuIpcOpenMemHandle_v2(LAZY_ENABLE_PEER_ACCESS)"); err != nil {
		return 0, fmt.Errorf("cuda: %s: open peer memory: %w", d.name, err)
	}
	d.mu.Lock()
	d.views[p]++
	d.mu.Unlock()
	return p, nil
}

// ClosePeer implements device.Device with cuIpcCloseMemHandle.
func (d *Device) ClosePeer(p device.Ptr) error {
	if err := d.live(); err != nil {
		return err
	}
	d.mu.Lock()
	n := d.views[p]
	d.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("cuda: %s: %v is not an open peer view: %w", d.name, p, device.ErrInvalidArgument)
	}
	if err := d.check(d.drv.ipcCloseMemHandle(d.ctx, p), "cuIpcCloseMemHandle(%v)", p); err != nil {
		return err
	}
	d.mu.Lock()
	if d.views[p]--; d.views[p] <= 0 {
		delete(d.views, p)
	}
	d.mu.Unlock()
	return nil
}

// NewStream implements device.Device with cuStreamCreateWithPriority
// (CU_STREAM_NON_BLOCKING: no implicit synchronization with the legacy
// default stream). High is the context's greatest priority, the numerically
// lowest value; Normal the least, which is the default priority 0.
func (d *Device) NewStream(p device.Priority) (device.Stream, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	prio, kind := d.prioLeast, "stream"
	if p == device.High {
		prio, kind = d.prioGreatest, "stream(high)"
	}
	h, r := d.drv.streamCreateWithPriority(d.ctx, streamNonBlocking, prio)
	if err := d.check(r, "cuStreamCreateWithPriority(NON_BLOCKING, %d)", prio); err != nil {
		return nil, err
	}
	d.streams.Add(1)
	return &stream{dev: d, h: h, owned: true, name: fmt.Sprintf("%s %s %d", d.name, kind, d.serial.Add(1))}, nil
}

// StreamFromHandle implements device.Device: h is a CUstream of this
// device's primary context (a PyTorch stream's cuda_stream), or 0 for the
// legacy default stream. Closing the wrapper leaves the stream alive.
func (d *Device) StreamFromHandle(h uintptr) (device.Stream, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	return &stream{dev: d, h: h, name: fmt.Sprintf("%s foreign stream 0x%x", d.name, h)}, nil
}

// NewEvent implements device.Device with
// cuEventCreate(CU_EVENT_DISABLE_TIMING).
func (d *Device) NewEvent() (device.Event, error) {
	return d.newEvent(false)
}

// NewTimedEvent implements device.Device with cuEventCreate(CU_EVENT_DEFAULT).
func (d *Device) NewTimedEvent() (device.Event, error) {
	return d.newEvent(true)
}

func (d *Device) newEvent(timed bool) (device.Event, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	flags, name := uint32(eventDisableTiming), "DISABLE_TIMING"
	if timed {
		flags, name = eventDefault, "DEFAULT"
	}
	h, r := d.drv.eventCreate(d.ctx, flags)
	if err := d.check(r, "cuEventCreate(%s)", name); err != nil {
		return nil, err
	}
	d.events.Add(1)
	return &event{dev: d, h: h, timed: timed}, nil
}

// own returns s as a stream of this device that is still open.
func (d *Device) own(s device.Stream) (*stream, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	st, ok := s.(*stream)
	if !ok || st == nil {
		return nil, fmt.Errorf("cuda: %s: stream of another backend (%T): %w", d.name, s, device.ErrInvalidArgument)
	}
	if st.dev != d {
		return nil, fmt.Errorf("cuda: %s: stream %s belongs to another device: %w", d.name, st.name, device.ErrInvalidArgument)
	}
	if st.closed.Load() {
		return nil, fmt.Errorf("cuda: %s: %w", st.name, device.ErrClosed)
	}
	return st, nil
}

// Copy implements device.Device with cuMemcpyAsync: with unified addressing
// the driver infers the direction from the addresses, so peer views (IPC
// mappings) and local memory mix freely; device-to-device copies run on a
// copy engine.
func (d *Device) Copy(s device.Stream, dst, src device.Ptr, n int64) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: %s: copy of %d bytes: %w", d.name, n, device.ErrInvalidArgument)
	}
	if n == 0 {
		return nil
	}
	return d.check(d.drv.memcpyAsync(d.ctx, dst, src, n, st.h), "cuMemcpyAsync(%v <- %v, %d bytes, %s)", dst, src, n, st.name)
}

// Memset32 implements device.Device with cuMemsetD32Async.
func (d *Device) Memset32(s device.Stream, dst device.Ptr, v uint32, count int64) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if dst%4 != 0 || count < 0 {
		return fmt.Errorf("cuda: %s: memset32 of %d words at %v: %w", d.name, count, dst, device.ErrInvalidArgument)
	}
	if count == 0 {
		return nil
	}
	return d.check(d.drv.memsetD32Async(d.ctx, dst, v, count, st.h), "cuMemsetD32Async(%v, 0x%x, %d words, %s)", dst, v, count, st.name)
}

// WaitValue32 implements device.Device with cuStreamWaitValue32_v2; the
// device.Cmp values are the driver's CU_STREAM_WAIT_VALUE_GEQ (0, cyclic)
// and _EQ (1). The GPU waits without a bound: host waits on the stream
// (Synchronize) are what time out.
func (d *Device) WaitValue32(s device.Stream, w device.Word, cmp device.Cmp, v uint32) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if cmp != device.EQ && cmp != device.GEQ {
		return fmt.Errorf("cuda: %s: wait-value comparison %v: %w", d.name, cmp, device.ErrNotSupported)
	}
	if w.Addr%4 != 0 {
		return fmt.Errorf("cuda: %s: wait on %s: 32-bit word at unaligned address %v: %w", d.name, w.Label, w.Addr, device.ErrInvalidArgument)
	}
	r := d.drv.streamWaitValue32(d.ctx, st.h, w.Addr, v, uint32(cmp))
	return d.check(r, "cuStreamWaitValue32_v2(%s at %v %s %d, %s)", w.Label, w.Addr, cmp, v, st.name)
}

// WriteValue32 implements device.Device with cuStreamWriteValue32_v2 and
// flags 0, which keeps the memory barrier: the write is visible after all
// earlier work of the stream.
func (d *Device) WriteValue32(s device.Stream, addr device.Ptr, v uint32) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if addr%4 != 0 {
		return fmt.Errorf("cuda: %s: write-value: 32-bit word at unaligned address %v: %w", d.name, addr, device.ErrInvalidArgument)
	}
	r := d.drv.streamWriteValue32(d.ctx, st.h, addr, v, writeValueDefault)
	return d.check(r, "cuStreamWriteValue32_v2(%v = %d, %s)", addr, v, st.name)
}

// Prepare implements device.Device: it compiles (or finds in the disk
// cache) and loads k's module and looks k up, as Launch would on first use.
// cuModuleLoadData can wait for work already queued on the device (seen on
// H200s: it blocked behind a stream waiting for a peer that had exited), so
// this is done before anything that could wait is enqueued.
func (d *Device) Prepare(k *device.Kernel) error {
	if k == nil || k.Module == nil || k.Name == "" {
		return fmt.Errorf("cuda: %s: prepare of a kernel without a module or name: %w", d.name, device.ErrInvalidArgument)
	}
	_, err := d.function(k)
	return err
}

// Launch implements device.Device with cuLaunchKernel: grid×1×1 blocks of
// k.Block threads, k.Shared bytes of dynamic shared memory. The kernel's module is
// compiled (or found in the disk cache) and loaded on first use (see
// Prepare).
func (d *Device) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if k == nil || k.Module == nil || k.Name == "" {
		return fmt.Errorf("cuda: %s: launch of a kernel without a module or name: %w", d.name, device.ErrInvalidArgument)
	}
	if grid <= 0 || grid > 1<<31-1 {
		return fmt.Errorf("cuda: %s: kernel %s with grid %d: %w", d.name, k.Name, grid, device.ErrInvalidArgument)
	}
	if k.Block <= 0 || k.Block > 1024 {
		return fmt.Errorf("cuda: %s: kernel %s with %d threads per block: %w", d.name, k.Name, k.Block, device.ErrInvalidArgument)
	}
	packed, offsets, err := packArgs(k, args, d.encodeTensorMap)
	if err != nil {
		return err
	}
	fn, err := d.function(k)
	if err != nil {
		return err
	}
	r := d.drv.launchKernel(d.ctx, fn, uint32(grid), uint32(k.Block), uint32(k.Shared), st.h, packed, offsets)
	return d.check(r, "cuLaunchKernel(%s, grid %d, block %d, %s)", k.Name, grid, k.Block, st.name)
}

// Close implements device.Device: it unloads the kernel modules, destroys
// the transfer stream and releases the primary context. Memory, streams and
// events belong to their owners, who release them first; a stream or event
// closed after its device reports device.ErrClosed.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	var errs []error
	errs = append(errs, d.ReleaseBLAS(), d.mods.unloadAll(d))
	errs = append(errs, d.check(d.drv.streamDestroy(d.ctx, d.xfer), "cuStreamDestroy_v2(transfer stream)"))
	errs = append(errs, d.check(d.drv.primaryCtxRelease(d.dev), "cuDevicePrimaryCtxRelease_v2(%d)", d.dev))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: close %s: %w", d.name, err)
	}
	return nil
}

// encodeTensorMap encodes m for a kernel parameter (cuTensorMapEncodeTiled):
// 128-byte swizzle, L2 promotion of 256 bytes, zeros outside the tensor.
func (d *Device) encodeTensorMap(m device.TensorMap) ([tensorMapSize]byte, error) {
	if err := m.Check(); err != nil {
		return [tensorMapSize]byte{}, err
	}
	dt := tensorMapBFloat16
	switch m.DType {
	case dtype.F16:
		dt = tensorMapFloat16
	case dtype.E4M3:
		dt = tensorMapUint8 // TMA moves bytes; only the tensor cores read them as fp8
	}
	es := uint64(m.DType.Size())
	enc, r := d.drv.tensorMapEncodeTiled(d.ctx, dt, m.Base, [2]uint64{uint64(m.Cols), uint64(m.Rows)}, [2]uint64{es, uint64(m.RowBytes)},
		[2]uint32{uint32(m.BoxCols), uint32(m.BoxRows)}, tensorMapSwizzle128B, tensorMapL2Promotion256B)
	return enc, d.check(r, "cuTensorMapEncodeTiled([%d, %d] %v at %v, box %dx%d)", m.Rows, m.Cols, m.DType, m.Base, m.BoxRows, m.BoxCols)
}
