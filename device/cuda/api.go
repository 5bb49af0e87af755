package cuda

import "github.com/seed12530e24/hiercoll/device"

// result is a CUresult: 0 is CUDA_SUCCESS, anything else an error code.
type result int

// api is the CUDA driver as the rest of the package sees it: one method per
// driver entry point, Go types in and out, the CUresult returned as is.
// Methods that take a ctx make that (primary) context current on the calling
// OS thread inside the same C call (see hc_enter in driver_cgo.go), so no
// caller needs runtime.LockOSThread. Handles (CUcontext, CUstream, CUevent,
// CUmodule, CUfunction) travel as uintptr.
//
// The cgo build implements it over libcuda.so.1 (driver_cgo.go); without cgo
// there is no implementation and loadDriver reports device.ErrNotSupported
// (driver_nocgo.go), so the Device code above it is the same in both builds.
type api interface {
	// Process-wide calls, no context needed.
	driverVersion() (int, result)
	errorName(r result) string   // "" when the driver cannot name r
	errorString(r result) string // "" when the driver cannot describe r
	deviceCount() (int, result)
	deviceGet(ordinal int) (int, result)
	deviceAttribute(dev, attr int) (int, result)
	deviceName(dev int) (string, result)
	devicePCIBusID(dev int) (string, result)
	deviceTotalMem(dev int) (int64, result)
	deviceCanAccessPeer(dev, peer int) (bool, result)
	deviceP2PAttribute(attr, src, dst int) (int, result)
	primaryCtxRetain(dev int) (uintptr, result)
	primaryCtxRelease(dev int) result

	// Calls made with ctx current.
	streamPriorityRange(ctx uintptr) (least, greatest int, r result)
	memAlloc(ctx uintptr, size int64) (device.Ptr, result)
	memFree(ctx uintptr, p device.Ptr) result
	memAddressRange(ctx uintptr, p device.Ptr) (device.Ptr, int64, result)
	memcpyHtoDAsync(ctx uintptr, dst device.Ptr, src []byte, stream uintptr) result
	memcpyDtoHAsync(ctx uintptr, dst []byte, src device.Ptr, stream uintptr) result
	memcpyAsync(ctx uintptr, dst, src device.Ptr, n int64, stream uintptr) result
	memsetD32Async(ctx uintptr, dst device.Ptr, v uint32, count int64, stream uintptr) result
	ipcGetMemHandle(ctx uintptr, p device.Ptr) ([ipcHandleSize]byte, result)
	ipcOpenMemHandle(ctx uintptr, h [ipcHandleSize]byte, flags uint32) (device.Ptr, result)
	ipcCloseMemHandle(ctx uintptr, p device.Ptr) result
	streamCreateWithPriority(ctx uintptr, flags uint32, priority int) (uintptr, result)
	streamDestroy(ctx, stream uintptr) result
	streamQuery(ctx, stream uintptr) result
	streamWaitEvent(ctx, stream, event uintptr) result
	streamWaitValue32(ctx, stream uintptr, addr device.Ptr, v uint32, flags uint32) result
	streamWriteValue32(ctx, stream uintptr, addr device.Ptr, v uint32, flags uint32) result
	eventCreate(ctx uintptr, flags uint32) (uintptr, result)
	eventRecord(ctx, event, stream uintptr) result
	eventQuery(ctx, event uintptr) result
	eventDestroy(ctx, event uintptr) result
	eventElapsedTime(ctx, start, end uintptr) (float32, result)
	moduleLoadData(ctx uintptr, image []byte) (uintptr, result)
	moduleGetFunction(ctx, module uintptr, name string) (uintptr, result)
	moduleUnload(ctx, module uintptr) result
	// launchKernel launches f with grid×1×1 blocks of block×1×1 threads and
	// sharedBytes of dynamic shared memory. args holds the packed arguments,
	// argument i at offsets[i] (see packArgs); the implementation copies
	// them into 64-byte aligned C memory and builds kernelParams there.
	launchKernel(ctx, f uintptr, grid, block, sharedBytes uint32, stream uintptr, args []byte, offsets []int64) result
	// funcSetAttribute and funcGetAttribute set and read a kernel's
	// attribute (cuFuncSetAttribute, cuFuncGetAttribute).
	funcSetAttribute(ctx, f uintptr, attr, value int) result
	funcGetAttribute(ctx, f uintptr, attr int) (int, result)
	// tensorMapEncodeTiled encodes a 2-D tensor map: dims and strides
	// (bytes; stride[0] is the element size, stride[1] the row's) innermost
	// first, box in elements. cudaErrorNotSupported without the entry point.
	tensorMapEncodeTiled(ctx uintptr, dtype int, base device.Ptr, dims, stride [2]uint64, box [2]uint32, swizzle, l2promo int) ([tensorMapSize]byte, result)

	// Virtual memory management and multicast objects (CUmemGeneric-
	// AllocationHandle values travel as uint64). Only the multicast setup
	// (multicast.go) calls them, each after its Permit's check.
	memGetAllocationGranularity(ctx uintptr, dev int) (int64, result)
	memCreate(ctx uintptr, dev int, size int64) (uint64, result)
	memRelease(ctx uintptr, h uint64) result
	memAddressReserve(ctx uintptr, size, align int64) (device.Ptr, result)
	memAddressFree(ctx uintptr, p device.Ptr, size int64) result
	memMap(ctx uintptr, p device.Ptr, size int64, h uint64) result
	memUnmap(ctx uintptr, p device.Ptr, size int64) result
	memSetAccess(ctx uintptr, p device.Ptr, size int64, dev int) result
	memExportToFD(ctx uintptr, h uint64) (int, result)
	memImportFromFD(ctx uintptr, fd int) (uint64, result)
	multicastGranularity(ctx uintptr, devices int, size int64) (int64, result)
	multicastCreate(ctx uintptr, devices int, size int64) (uint64, result)
	multicastAddDevice(ctx uintptr, mc uint64, dev int) result
	multicastBindMem(ctx uintptr, mc, mem uint64, size int64) result
	multicastUnbind(ctx uintptr, mc uint64, dev int, size int64) result
	// Graphs: hasGraphs reports whether the driver has every entry point
	// below; without them streamIsCapturing reports false.
	hasGraphs() bool
	streamIsCapturing(ctx, stream uintptr) (bool, result)
	streamBeginCapture(ctx, stream uintptr, mode int) result
	streamEndCapture(ctx, stream uintptr) (graph uintptr, r result)
	graphInstantiate(ctx, graph uintptr) (exec uintptr, r result)
	graphLaunch(ctx, exec, stream uintptr) result
	graphExecDestroy(ctx, exec uintptr) result
	graphDestroy(ctx, graph uintptr) result

	// symbol names the entry point a method resolved to, for messages:
	// symbol("cuEventElapsedTime") is "cuEventElapsedTime_v2" on drivers
	// that have it.
	symbol(base string) string
}

// compiler is NVRTC: CUDA C++ source to a CUBIN for one architecture.
type compiler interface {
	// version is NVRTC's "major.minor".
	version() string
	// path is the library that was loaded.
	path() string
	// compile builds source; log is NVRTC's program log (warnings on
	// success, the errors on failure, where the error also carries it).
	compile(source, name string, options []string) (cubin []byte, log string, err error)
}
