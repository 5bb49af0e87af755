package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seed12530e24/hiercoll/device"
)

// loadedModule is a CUmodule on one device and the functions looked up in it.
type loadedModule struct {
	name   string
	handle uintptr // CUmodule
	funcs  map[string]uintptr
}

// kernelEntry caches the CUfunction of a *device.Kernel; module and name are
// kept to notice a Kernel value changed after its first launch.
type kernelEntry struct {
	module *device.Module
	name   string
	fn     uintptr
}

// moduleSet is a device's loaded modules. Launch takes mu briefly; compiling
// and loading a module happen under compileMu only, so launches of loaded
// kernels never wait for NVRTC.
type moduleSet struct {
	mu       sync.Mutex
	bySource map[string]*loadedModule // key: sha256 of the source
	byModule map[*device.Module]*loadedModule
	byKernel map[*device.Kernel]kernelEntry

	compileMu sync.Mutex
	hits      atomic.Int64
	compiles  atomic.Int64
}

func (ms *moduleSet) init() {
	ms.bySource = make(map[string]*loadedModule)
	ms.byModule = make(map[*device.Module]*loadedModule)
	ms.byKernel = make(map[*device.Kernel]kernelEntry)
}

func (ms *moduleSet) count() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.bySource)
}

func (ms *moduleSet) unloadAll(d *Device) error {
	ms.compileMu.Lock()
	defer ms.compileMu.Unlock()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var errs []error
	for key, m := range ms.bySource {
		errs = append(errs, d.check(d.drv.moduleUnload(d.ctx, m.handle), "cuModuleUnload(%s)", m.name))
		delete(ms.bySource, key)
	}
	clear(ms.byModule)
	clear(ms.byKernel)
	return errors.Join(errs...)
}

func sourceKey(m *device.Module) string {
	sum := sha256.Sum256([]byte(m.Source))
	return hex.EncodeToString(sum[:])
}

// function returns the CUfunction of k, loading its module if needed.
func (d *Device) function(k *device.Kernel) (uintptr, error) {
	ms := &d.mods
	ms.mu.Lock()
	if e, ok := ms.byKernel[k]; ok && e.module == k.Module && e.name == k.Name {
		ms.mu.Unlock()
		return e.fn, nil
	}
	ms.mu.Unlock()

	m, err := d.loadModule(k.Module)
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: kernel %s: %w", d.name, k.Name, err)
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	fn, ok := m.funcs[k.Name]
	if !ok {
		var r result
		fn, r = d.drv.moduleGetFunction(d.ctx, m.handle, k.Name)
		if err := d.check(r, "cuModuleGetFunction(%s, %q)", m.name, k.Name); err != nil {
			return 0, err
		}
		m.funcs[k.Name] = fn
	}
	if k.Shared > defaultSharedLimit {
		// Above the default limit a kernel must ask for its dynamic shared
		// memory first.
		r := d.drv.funcSetAttribute(d.ctx, fn, funcAttrMaxDynamicShared, k.Shared)
		if err := d.check(r, "cuFuncSetAttribute(%s, max dynamic shared memory %d)", k.Name, k.Shared); err != nil {
			return 0, err
		}
	}
	ms.byKernel[k] = kernelEntry{module: k.Module, name: k.Name, fn: fn}
	return fn, nil
}

// Compile compiles module m for this device (or finds it in the disk cache)
// and loads it now, so that source errors surface before any launch and the
// first launch does not pay for NVRTC.
func (d *Device) Compile(m *device.Module) error {
	if err := d.live(); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("cuda: %s: compile of a nil module: %w", d.name, device.ErrInvalidArgument)
	}
	_, err := d.loadModule(m)
	return err
}

// KernelCache reports where kernels are cached and how modules were obtained.
func (d *Device) KernelCache() CacheStats {
	return CacheStats{Dir: d.cache.dir, Hits: int(d.mods.hits.Load()), Compiles: int(d.mods.compiles.Load())}
}

// loadModule returns m loaded on this device: already loaded (by this
// *Module or another with the same source), from the disk cache, or
// compiled now.
func (d *Device) loadModule(m *device.Module) (*loadedModule, error) {
	ms := &d.mods
	ms.mu.Lock()
	if lm, ok := ms.byModule[m]; ok {
		ms.mu.Unlock()
		return lm, nil
	}
	ms.mu.Unlock()

	ms.compileMu.Lock()
	defer ms.compileMu.Unlock()
	if err := d.live(); err != nil {
		return nil, err
	}
	key := sourceKey(m)
	ms.mu.Lock()
	lm, ok := ms.bySource[key]
	ms.mu.Unlock()
	if !ok {
		h, err := d.buildModule(m)
		if err != nil {
			return nil, err
		}
		lm = &loadedModule{name: m.Name, handle: h, funcs: make(map[string]uintptr)}
	}
	ms.mu.Lock()
	ms.bySource[key] = lm
	ms.byModule[m] = lm
	ms.mu.Unlock()
	return lm, nil
}

// buildModule gets a CUBIN for m (disk cache, else NVRTC) and loads it with
// cuModuleLoadData. A cached CUBIN the driver rejects is recompiled once.
func (d *Device) buildModule(m *device.Module) (uintptr, error) {
	arch, err := moduleArch(m, d.arch)
	if err != nil {
		return 0, err
	}
	comp, err := loadNVRTC()
	if err != nil {
		return 0, fmt.Errorf("module %s needs compiling: %w", m.Name, err)
	}
	opts := compileOptions(arch)
	key := cacheKey(m.Source, arch, comp.version(), opts)
	if image, ok := d.cache.load(m.Name, key); ok && isCUBIN(image) {
		h, r := d.drv.moduleLoadData(d.ctx, image)
		if r == cudaSuccess {
			d.mods.hits.Add(1)
			return h, nil
		}
		// A stale or damaged entry: fall through and rebuild it.
	}
	image, _, err := comp.compile(m.Source, m.Name, opts)
	if err != nil {
		return 0, err
	}
	d.mods.compiles.Add(1)
	h, r := d.drv.moduleLoadData(d.ctx, image)
	if err := d.check(r, "cuModuleLoadData(%s, %d-byte CUBIN for %s)", m.Name, len(image), arch); err != nil {
		return 0, err
	}
	_ = d.cache.store(m.Name, key, image) // a cache that cannot be written costs a recompile later, nothing more
	return h, nil
}

// moduleArch is the architecture m is compiled for on a device of arch
// devArch: the device's, or the module's own where it names one ("sm_90a"),
// which only a device of that base architecture ("sm_90") runs.
func moduleArch(m *device.Module, devArch string) (string, error) {
	if m.Arch == "" {
		return devArch, nil
	}
	if strings.TrimRight(m.Arch, "af") != devArch {
		return "", fmt.Errorf("cuda: module %s is written for %s; this device is %s: %w", m.Name, m.Arch, devArch, device.ErrNotSupported)
	}
	return m.Arch, nil
}

var archPattern = regexp.MustCompile(`^sm_[0-9]{2,3}[af]?$`)

// CompileOnly compiles module m for arch ("sm_90"; a module written for
// an architecture of its own is compiled for that one, which must match)
// with NVRTC and returns the CUBIN and NVRTC's log. It needs NVRTC but no
// GPU or driver, and does not use the disk cache: it is for checking that
// sources compile.
func CompileOnly(m *device.Module, arch string) ([]byte, string, error) {
	if m == nil {
		return nil, "", fmt.Errorf("cuda: compile of a nil module: %w", device.ErrInvalidArgument)
	}
	if !archPattern.MatchString(arch) {
		return nil, "", fmt.Errorf("cuda: compile %s: architecture %q is not of the form sm_90: %w", m.Name, arch, device.ErrInvalidArgument)
	}
	arch, err := moduleArch(m, strings.TrimRight(arch, "af"))
	if err != nil {
		return nil, "", err
	}
	comp, err := loadNVRTC()
	if err != nil {
		return nil, "", err
	}
	return comp.compile(m.Source, m.Name, compileOptions(arch))
}

// isCUBIN reports whether b looks like a CUBIN (an ELF image).
func isCUBIN(b []byte) bool { return bytes.HasPrefix(b, []byte("\x7fELF")) }

// KernelResources is what the compiler gave a kernel: registers per thread
// and local memory per thread (bytes; spills and arrays the compiler could
// not keep in registers).
type KernelResources struct {
	Registers, LocalBytes int
}

// Resources loads k (as Prepare does) and reports its resources.
func (d *Device) Resources(k *device.Kernel) (KernelResources, error) {
	fn, err := d.function(k)
	if err != nil {
		return KernelResources{}, err
	}
	regs, r := d.drv.funcGetAttribute(d.ctx, fn, funcAttrNumRegs)
	if err := d.check(r, "cuFuncGetAttribute(%s, registers)", k.Name); err != nil {
		return KernelResources{}, err
	}
	local, r := d.drv.funcGetAttribute(d.ctx, fn, funcAttrLocalBytes)
	if err := d.check(r, "cuFuncGetAttribute(%s, local bytes)", k.Name); err != nil {
		return KernelResources{}, err
	}
	return KernelResources{Registers: regs, LocalBytes: local}, nil
}
