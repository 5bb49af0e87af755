// Package cuda is hiercoll's GPU backend: device.Device over the CUDA driver
// API, loaded at run time, so that the module builds and runs on machines
// without CUDA. Open returns an error wrapping device.ErrNotSupported when
// there is no usable driver ("cuda: no CUDA driver: libcuda.so.1 ..."), and
// callers fall back to the CPU backend (device/sim); a binary built with
// CGO_ENABLED=0 behaves the same way.
//
// # Loading
//
// libcuda.so.1 is opened with native/dl (never libcuda.so, which may be the
// toolkit's stub) and cuInit(0) runs once per process. Every other entry
// point is resolved with cuGetProcAddress_v2(base name, ABI version,
// CU_GET_PROC_ADDRESS_DEFAULT, &status), asking for the ABI version of the
// variant this package calls: 3020 for the 64-bit _v2 memory calls, 11000 for
// cuIpcOpenMemHandle_v2 and cuDevicePrimaryCtxRelease_v2, 11070 for
// cuStreamWaitValue32_v2 / cuStreamWriteValue32_v2, 12080 for
// cuEventElapsedTime_v2 (older drivers: cuEventElapsedTime, same signature).
// Where cuGetProcAddress_v2 is missing (drivers before 12.0) or does not
// know a symbol, the versioned export name is looked up with dlsym
// (cuMemAlloc_v2, ...); an unsuffixed legacy name is never bound where a _v2
// exists. The default flag gives the legacy-default-stream variants; every
// call here names its stream, so that matters only for StreamFromHandle(0).
// No CUDA header is used: the few types are declared in the cgo preamble of
// driver_cgo.go (CUresult and CUdevice int, CUdeviceptr unsigned long long,
// opaque pointers for handles, a 64-byte CUipcMemHandle), and each C
// signature has a static trampoline that casts the function pointer and
// calls it.
//
// # Multicast
//
// The Device is a device.Multicaster (multicast.go): NVLink multicast
// objects over the driver's virtual memory management (cuMulticast*,
// cuMemCreate, cuMemMap, ... resolved when present, called only there).
// Every one of its calls first checks its device.Permit, which runs
// device.AllowMulticast's gate again (named by the caller,
// HIERCOLL_ALLOW_MULTICAST=1, none of NCCL_NVLS_ENABLE=0,
// NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, the device's
// MULTICAST_SUPPORTED): without it no multicast or VMM driver call is made
// (see the safety rule in DESIGN.md). An object's POSIX-fd handle reaches the
// node's other processes over a Unix socket (internal/fdpass). This was
// verified against the fake driver only (testdata/fakecuda, which models the
// objects and logs every such call: TestMulticastRefusedCombinationsCallNothing
// and the setup-order tests), never on a GPU.
//
// # The context rule
//
// A Device works in its GPU's primary context (cuDevicePrimaryCtxRetain at
// Open, cuDevicePrimaryCtxRelease_v2 at Close), the context PyTorch and NCCL
// use, so pointers and streams pass freely between them. The current
// context is per OS thread and goroutines move between threads, so every
// trampoline makes the context current inside the same C call: it reads
// cuCtxGetCurrent and calls cuCtxSetCurrent only when another context is
// current, restoring that one afterwards (a PyTorch thread working on
// another device keeps its context). No runtime.LockOSThread is needed, and
// the common case costs one thread-local read.
//
// # Streams and host waits
//
// Streams are created non-blocking (no implicit synchronization with the
// legacy default stream). Host waits (Stream.Synchronize,
// Event.Synchronize) poll cuStreamQuery / cuEventQuery, spinning about 20µs
// and then sleeping with doubling intervals up to 1ms, and end with a
// *device.TimeoutError at the context's deadline: a stream stuck in a
// wait-value that nobody will satisfy never hangs the host. On the GPU the
// wait itself is unbounded. Release such a stream (write the word) before
// freeing memory or closing the device: cuMemFree, cuModuleUnload and the
// release of the last reference to a context wait for the device.
//
// # Kernels
//
// A device.Kernel names an entry point of a device.Module (self-contained
// CUDA C++, no #include). On the first Launch of a kernel whose module is not
// loaded on the device, the module is compiled with NVRTC for the device's
// own architecture (sm_XY from the compute capability) with
// --gpu-architecture=sm_XY -default-device --std=c++17 -lineinfo, to a
// CUBIN loaded with cuModuleLoadData; functions come from
// cuModuleGetFunction and are cached per device. NVRTC is found as
// $HIERCOLL_NVRTC, else libnvrtc.so.13, .so.12, .so on the loader path, under
// $CUDA_HOME/lib64 and under /usr/local/cuda/lib64; its libnvrtc-builtins is
// preloaded by full path from the same directory, as NVRTC loads it by name.
// A compile error carries NVRTC's whole log.
//
// CUBINs are cached on disk (Options.KernelCacheDir, default
// $HIERCOLL_CACHE_DIR, else $XDG_CACHE_HOME/hiercoll, else
// ~/.cache/hiercoll), keyed by sha256 of source, architecture, NVRTC version
// and options. Entries are written to a temporary file and renamed, carry a
// checksum, and a damaged entry (or one the driver rejects) is recompiled, so
// the ranks of a node may start together. Device.Compile compiles and loads a
// module at once; CompileOnly needs only NVRTC, no GPU.
//
// # The seam, call by call
//
//	Alloc                  cuMemAlloc_v2 (256-byte aligned)
//	Free                   cuMemFree_v2
//	CopyToDevice           cuMemcpyHtoDAsync_v2 on the device's transfer stream, polled to completion
//	CopyToHost             cuMemcpyDtoHAsync_v2 on the transfer stream, polled to completion
//	AddressRange           cuMemGetAddressRange_v2
//	ExportMem              cuIpcGetMemHandle (64 bytes)
//	OpenPeer / ClosePeer   cuIpcOpenMemHandle_v2 (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) / cuIpcCloseMemHandle
//	NewStream              cuStreamCreateWithPriority (CU_STREAM_NON_BLOCKING; High = greatest priority)
//	StreamFromHandle       wraps a CUstream; Close leaves it alive
//	NewEvent               cuEventCreate (CU_EVENT_DISABLE_TIMING)
//	NewTimedEvent          cuEventCreate (CU_EVENT_DEFAULT: timing enabled)
//	Copy                   cuMemcpyAsync (unified addressing: local or peer, copy engine)
//	Memset32               cuMemsetD32Async
//	WaitValue32            cuStreamWaitValue32_v2 (GEQ 0, cyclic; EQ 1)
//	WriteValue32           cuStreamWriteValue32_v2 (flags 0: keeps the memory barrier)
//	Launch                 cuLaunchKernel (grid×1×1, Block×1×1, no dynamic shared memory)
//	Stream.WaitEvent       cuStreamWaitEvent
//	Stream/Event.Synchronize, Event.Done   cuStreamQuery / cuEventQuery (CUDA_ERROR_NOT_READY = 600 is pending)
//	Event.Record / Since   cuEventRecord / cuEventElapsedTime_v2
//	Info                   cuDeviceGetName, attributes 16 (SMs), 40 (copy engines), 132 (multicast), hostname
//	Multicaster            cuMulticast*, cuMem* VMM calls (multicast.go), each behind its Permit
//
// Host copies deviate from a plain cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 on
// purpose: from pageable memory the synchronous HtoD may return before its
// DMA has landed, and both synchronize with the legacy default stream, which
// another library's blocking streams can hold up. The asynchronous copy on a
// private non-blocking stream, polled to completion, is truly synchronous
// and waits for nothing else. Kernel arguments are packed one 8-byte slot
// each (device.Ptr, int64, uint64: 8 bytes; int32, uint32, float32: 4 bytes
// at the slot's start), and both the slots and the kernelParams array are
// built in C memory for the call.
//
// Resources are counted per device (Live) so tests can check for leaks. The
// fake driver in testdata/fakecuda lets the binding itself run in tests on
// machines without a GPU.
//
// # Where the values come from
//
// The CUresult codes, flags, attribute and P2P-attribute numbers in consts.go
// were checked against NVIDIA's driver API documentation (Entry Point Access
// for cuGetProcAddress_v2 and CUdriverProcAddressQueryResult SUCCESS=0,
// SYMBOL_NOT_FOUND=1, VERSION_NOT_SUFFICIENT=2), the cuda-python bindings
// (CUipcMem_flags, CUdevice_P2PAttribute PERFORMANCE_RANK=1,
// ACCESS_SUPPORTED=2, NATIVE_ATOMIC_SUPPORTED=3) and public transcriptions of
// cuda.h and cudaTypedefs.h (the CUdevice_attribute and CUresult enums, the
// PFN_*_vNNNN ABI versions); cuEventElapsedTime_v2 is documented as CUDA
// 12.8. NVRTC signatures are those of nvrtc.h (nvrtcResult 0 is success).
package cuda
