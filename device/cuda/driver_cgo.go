//go:build cgo

package cuda

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The few CUDA driver types used here, declared as cuda.h declares them for
// 64-bit Linux (no CUDA headers are needed to build).
typedef int CUresult;                  // enum cudaError_enum
typedef int CUdevice;                  // CUdevice_v1
typedef unsigned long long CUdeviceptr; // CUdeviceptr_v2
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct { char reserved[64]; } CUipcMemHandle; // CU_IPC_HANDLE_SIZE

// cuCtxGetCurrent / cuCtxSetCurrent, set once at load.
static void *hc_ctxGetCurrent, *hc_ctxSetCurrent;

static void hc_setContextCalls(void *get, void *set) {
	hc_ctxGetCurrent = get;
	hc_ctxSetCurrent = set;
}

// hc_enter makes ctx current on this OS thread for the driver call that
// follows in the same cgo call. It costs one cuCtxGetCurrent (a thread-local
// read) when ctx is already current. *saved receives what hc_leave must
// restore: the caller's own context when there was a different one (a
// PyTorch thread on another device), else ctx itself (nothing to restore).
static CUresult hc_enter(uintptr_t ctx, CUcontext *saved) {
	CUcontext want = (CUcontext)ctx, cur = NULL;
	CUresult r;
	*saved = want;
	if (want == NULL) {
		return 0;
	}
	r = ((CUresult (*)(CUcontext *))hc_ctxGetCurrent)(&cur);
	if (r != 0) {
		return r;
	}
	if (cur == want) {
		return 0;
	}
	r = ((CUresult (*)(CUcontext))hc_ctxSetCurrent)(want);
	if (r != 0) {
		return r;
	}
	*saved = cur;
	return 0;
}

static void hc_leave(uintptr_t ctx, CUcontext saved) {
	if (saved != NULL && saved != (CUcontext)ctx) {
		((CUresult (*)(CUcontext))hc_ctxSetCurrent)(saved);
	}
}

// HC_CALL runs one driver call with ctx current and returns its CUresult.
#define HC_CALL(ctx, call) do { \
	CUcontext saved_; \
	CUresult r_ = hc_enter((ctx), &saved_); \
	if (r_ != 0) return r_; \
	r_ = (call); \
	hc_leave((ctx), saved_); \
	return r_; \
} while (0)

// Loading.

// cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
//                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
static void *call_getProcAddress(void *fn, const char *sym, int version, unsigned long long flags, int *res, int *status) {
	void *p = NULL;
	int st = -1;
	*res = ((CUresult (*)(const char *, void **, int, uint64_t, int *))fn)(sym, &p, version, (uint64_t)flags, &st);
	*status = st;
	return p;
}

// Process-wide calls (no context).

static int call_init(void *fn, unsigned flags) {
	return ((CUresult (*)(unsigned int))fn)(flags);
}

static int call_intOut(void *fn, int *out) { // cuDriverGetVersion, cuDeviceGetCount
	return ((CUresult (*)(int *))fn)(out);
}

static const char *call_errorText(void *fn, int code, int *res) { // cuGetErrorName, cuGetErrorString
	const char *s = NULL;
	*res = ((CUresult (*)(CUresult, const char **))fn)(code, &s);
	return s;
}

static int call_deviceGet(void *fn, CUdevice *dev, int ordinal) {
	return ((CUresult (*)(CUdevice *, int))fn)(dev, ordinal);
}

static int call_deviceGetAttribute(void *fn, int *value, int attr, CUdevice dev) {
	return ((CUresult (*)(int *, int, CUdevice))fn)(value, attr, dev);
}

static int call_deviceString(void *fn, char *buf, int len, CUdevice dev) { // cuDeviceGetName, cuDeviceGetPCIBusId
	return ((CUresult (*)(char *, int, CUdevice))fn)(buf, len, dev);
}

static int call_deviceTotalMem(void *fn, size_t *bytes, CUdevice dev) {
	return ((CUresult (*)(size_t *, CUdevice))fn)(bytes, dev);
}

static int call_deviceCanAccessPeer(void *fn, int *can, CUdevice dev, CUdevice peer) {
	return ((CUresult (*)(int *, CUdevice, CUdevice))fn)(can, dev, peer);
}

static int call_deviceGetP2PAttribute(void *fn, int *value, int attr, CUdevice src, CUdevice dst) {
	return ((CUresult (*)(int *, int, CUdevice, CUdevice))fn)(value, attr, src, dst);
}

static int call_primaryCtxRetain(void *fn, uintptr_t *ctx, CUdevice dev) {
	CUcontext c = NULL;
	CUresult r = ((CUresult (*)(CUcontext *, CUdevice))fn)(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}

static int call_primaryCtxRelease(void *fn, CUdevice dev) {
	return ((CUresult (*)(CUdevice))fn)(dev);
}

// Calls with the context current.

static int call_ctxGetStreamPriorityRange(void *fn, uintptr_t ctx, int *least, int *greatest) {
	HC_CALL(ctx, ((CUresult (*)(int *, int *))fn)(least, greatest));
}

static int call_memAlloc(void *fn, uintptr_t ctx, CUdeviceptr *p, size_t size) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr *, size_t))fn)(p, size));
}

static int call_ptr(void *fn, uintptr_t ctx, CUdeviceptr p) { // cuMemFree_v2, cuIpcCloseMemHandle
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr))fn)(p));
}

static int call_memGetAddressRange(void *fn, uintptr_t ctx, CUdeviceptr *base, size_t *size, CUdeviceptr p) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr *, size_t *, CUdeviceptr))fn)(base, size, p));
}

static int call_memcpyHtoDAsync(void *fn, uintptr_t ctx, CUdeviceptr dst, const void *src, size_t n, uintptr_t stream) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, const void *, size_t, CUstream))fn)(dst, src, n, (CUstream)stream));
}

static int call_memcpyDtoHAsync(void *fn, uintptr_t ctx, void *dst, CUdeviceptr src, size_t n, uintptr_t stream) {
	HC_CALL(ctx, ((CUresult (*)(void *, CUdeviceptr, size_t, CUstream))fn)(dst, src, n, (CUstream)stream));
}

static int call_memcpyAsync(void *fn, uintptr_t ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t stream) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))fn)(dst, src, n, (CUstream)stream));
}

static int call_memsetD32Async(void *fn, uintptr_t ctx, CUdeviceptr dst, unsigned int v, size_t count, uintptr_t stream) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream))fn)(dst, v, count, (CUstream)stream));
}

static int call_ipcGetMemHandle(void *fn, uintptr_t ctx, unsigned char *out, CUdeviceptr p) {
	CUipcMemHandle h;
	CUcontext saved;
	CUresult r;
	memset(&h, 0, sizeof h);
	r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(CUipcMemHandle *, CUdeviceptr))fn)(&h, p);
	hc_leave(ctx, saved);
	if (r == 0) {
		memcpy(out, h.reserved, sizeof h.reserved);
	}
	return r;
}

// cuIpcOpenMemHandle_v2 takes the handle by value.
static int call_ipcOpenMemHandle(void *fn, uintptr_t ctx, CUdeviceptr *p, const unsigned char *in, unsigned int flags) {
	CUipcMemHandle h;
	memcpy(h.reserved, in, sizeof h.reserved);
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr *, CUipcMemHandle, unsigned int))fn)(p, h, flags));
}

static int call_streamCreateWithPriority(void *fn, uintptr_t ctx, uintptr_t *stream, unsigned int flags, int priority) {
	CUstream s = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(CUstream *, unsigned int, int))fn)(&s, flags, priority);
	hc_leave(ctx, saved);
	*stream = (uintptr_t)s;
	return r;
}

static int call_stream(void *fn, uintptr_t ctx, uintptr_t stream) { // cuStreamDestroy_v2, cuStreamQuery
	HC_CALL(ctx, ((CUresult (*)(CUstream))fn)((CUstream)stream));
}

static int call_streamWaitEvent(void *fn, uintptr_t ctx, uintptr_t stream, uintptr_t event, unsigned int flags) {
	HC_CALL(ctx, ((CUresult (*)(CUstream, CUevent, unsigned int))fn)((CUstream)stream, (CUevent)event, flags));
}

// cuStreamWaitValue32_v2 / cuStreamWriteValue32_v2(CUstream, CUdeviceptr, cuuint32_t, unsigned int)
static int call_streamValue32(void *fn, uintptr_t ctx, uintptr_t stream, CUdeviceptr addr, uint32_t value, unsigned int flags) {
	HC_CALL(ctx, ((CUresult (*)(CUstream, CUdeviceptr, uint32_t, unsigned int))fn)((CUstream)stream, addr, value, flags));
}

// Graphs (CUDA 10+): cuStreamIsCapturing(CUstream, CUstreamCaptureStatus*),
// cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode),
// cuStreamEndCapture(CUstream, CUgraph*),
// cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long),
// cuGraphLaunch(CUgraphExec, CUstream), cuGraphExecDestroy(CUgraphExec),
// cuGraphDestroy(CUgraph).
static int call_streamIsCapturing(void *fn, uintptr_t ctx, uintptr_t stream, int *status) {
	HC_CALL(ctx, ((CUresult (*)(CUstream, int *))fn)((CUstream)stream, status));
}

static int call_streamBeginCapture(void *fn, uintptr_t ctx, uintptr_t stream, int mode) {
	HC_CALL(ctx, ((CUresult (*)(CUstream, int))fn)((CUstream)stream, mode));
}

static int call_handleOut(void *fn, uintptr_t ctx, uintptr_t in, uintptr_t *out) { // cuStreamEndCapture
	void *h = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(void *, void **))fn)((void *)in, &h);
	hc_leave(ctx, saved);
	*out = (uintptr_t)h;
	return r;
}

static int call_graphInstantiate(void *fn, uintptr_t ctx, uintptr_t graph, uintptr_t *exec) {
	void *h = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(void **, void *, unsigned long long))fn)(&h, (void *)graph, 0ULL);
	hc_leave(ctx, saved);
	*exec = (uintptr_t)h;
	return r;
}

static int call_handleStream(void *fn, uintptr_t ctx, uintptr_t h, uintptr_t stream) { // cuGraphLaunch
	HC_CALL(ctx, ((CUresult (*)(void *, CUstream))fn)((void *)h, (CUstream)stream));
}

static int call_handle(void *fn, uintptr_t ctx, uintptr_t h) { // cuGraphExecDestroy, cuGraphDestroy
	HC_CALL(ctx, ((CUresult (*)(void *))fn)((void *)h));
}

static int call_eventCreate(void *fn, uintptr_t ctx, uintptr_t *event, unsigned int flags) {
	CUevent e = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(CUevent *, unsigned int))fn)(&e, flags);
	hc_leave(ctx, saved);
	*event = (uintptr_t)e;
	return r;
}

static int call_eventRecord(void *fn, uintptr_t ctx, uintptr_t event, uintptr_t stream) {
	HC_CALL(ctx, ((CUresult (*)(CUevent, CUstream))fn)((CUevent)event, (CUstream)stream));
}

static int call_event(void *fn, uintptr_t ctx, uintptr_t event) { // cuEventQuery, cuEventDestroy_v2
	HC_CALL(ctx, ((CUresult (*)(CUevent))fn)((CUevent)event));
}

static int call_eventElapsedTime(void *fn, uintptr_t ctx, float *ms, uintptr_t start, uintptr_t end) {
	HC_CALL(ctx, ((CUresult (*)(float *, CUevent, CUevent))fn)(ms, (CUevent)start, (CUevent)end));
}

static int call_moduleLoadData(void *fn, uintptr_t ctx, uintptr_t *module, const void *image) {
	CUmodule m = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(CUmodule *, const void *))fn)(&m, image);
	hc_leave(ctx, saved);
	*module = (uintptr_t)m;
	return r;
}

static int call_moduleGetFunction(void *fn, uintptr_t ctx, uintptr_t *function, uintptr_t module, const char *name) {
	CUfunction f = NULL;
	CUcontext saved;
	CUresult r = hc_enter(ctx, &saved);
	if (r != 0) {
		return r;
	}
	r = ((CUresult (*)(CUfunction *, CUmodule, const char *))fn)(&f, (CUmodule)module, name);
	hc_leave(ctx, saved);
	*function = (uintptr_t)f;
	return r;
}

static int call_moduleUnload(void *fn, uintptr_t ctx, uintptr_t module) {
	HC_CALL(ctx, ((CUresult (*)(CUmodule))fn)((CUmodule)module));
}

// call_launchKernel copies the packed arguments into C memory aligned for
// any parameter (a CUtensorMap needs 64 bytes), points kernelParams at each
// one's offset, launches, and frees both: cuLaunchKernel has copied the
// parameter values by the time it returns.
static int call_launchKernel(void *fn, uintptr_t ctx, uintptr_t f,
		unsigned int grid, unsigned int block, unsigned int shared, uintptr_t stream,
		const unsigned char *args, size_t nbytes, const long long *offsets, int nargs) {
	void **params = NULL;
	unsigned char *store = NULL;
	CUcontext saved;
	CUresult r;
	int i;
	if (nargs > 0) {
		params = (void **)malloc((size_t)nargs * sizeof(void *));
		store = (unsigned char *)aligned_alloc(64, (nbytes + 63) / 64 * 64);
		if (params == NULL || store == NULL) {
			free(params);
			free(store);
			return 2; // CUDA_ERROR_OUT_OF_MEMORY (of the host, here)
		}
		memcpy(store, args, nbytes);
		for (i = 0; i < nargs; i++) {
			params[i] = store + offsets[i];
		}
	}
	r = hc_enter(ctx, &saved);
	if (r == 0) {
		r = ((CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
				unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **))fn)(
			(CUfunction)f, grid, 1, 1, block, 1, 1, shared, (CUstream)stream, params, NULL);
		hc_leave(ctx, saved);
	}
	free(params);
	free(store);
	return r;
}

static int call_funcSetAttribute(void *fn, uintptr_t ctx, uintptr_t f, int attr, int value) {
	HC_CALL(ctx, ((CUresult (*)(CUfunction, int, int))fn)((CUfunction)f, attr, value));
}

static int call_funcGetAttribute(void *fn, uintptr_t ctx, int *value, int attr, uintptr_t f) {
	HC_CALL(ctx, ((CUresult (*)(int *, int, CUfunction))fn)(value, attr, (CUfunction)f));
}

// Virtual memory management and multicast objects (cuMem*, cuMulticast*).
// The structures as cuda.h declares them (CUmemAllocationProp, CUmemLocation,
// CUmemAccessDesc, CUmulticastObjectProp); the enum values used are
// CU_MEM_ALLOCATION_TYPE_PINNED = 1, CU_MEM_LOCATION_TYPE_DEVICE = 1,
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
// CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 and the MINIMUM (0) granularities.
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type; int id; } HcMemLocation;
typedef struct {
	int type;
	int requestedHandleTypes;
	HcMemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} HcMemAllocationProp;
typedef struct { HcMemLocation location; int flags; } HcMemAccessDesc;
typedef struct {
	unsigned int numDevices;
	size_t size;
	unsigned long long handleTypes;
	unsigned long long flags;
} HcMulticastObjectProp;

enum { HC_MEM_PINNED = 1, HC_LOCATION_DEVICE = 1, HC_HANDLE_POSIX_FD = 1, HC_PROT_READWRITE = 3 };

// Device memory of dev, no shareable handle (the bound buffers stay local).
static void hc_allocProp(HcMemAllocationProp *p, int dev) {
	memset(p, 0, sizeof *p);
	p->type = HC_MEM_PINNED;
	p->location.type = HC_LOCATION_DEVICE;
	p->location.id = dev;
}

static void hc_multicastProp(HcMulticastObjectProp *p, unsigned int devices, size_t size) {
	memset(p, 0, sizeof *p);
	p->numDevices = devices;
	p->size = size;
	p->handleTypes = HC_HANDLE_POSIX_FD;
}

static int call_memGetAllocationGranularity(void *fn, uintptr_t ctx, size_t *g, int dev) {
	HcMemAllocationProp p;
	hc_allocProp(&p, dev);
	HC_CALL(ctx, ((CUresult (*)(size_t *, const HcMemAllocationProp *, int))fn)(g, &p, 0));
}

static int call_memCreate(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle *h, size_t size, int dev) {
	HcMemAllocationProp p;
	hc_allocProp(&p, dev);
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle *, size_t, const HcMemAllocationProp *, unsigned long long))fn)(h, size, &p, 0));
}

static int call_memHandle(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle h) { // cuMemRelease
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle))fn)(h));
}

static int call_memAddressReserve(void *fn, uintptr_t ctx, CUdeviceptr *p, size_t size, size_t align) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))fn)(p, size, align, 0, 0));
}

static int call_ptrSize(void *fn, uintptr_t ctx, CUdeviceptr p, size_t size) { // cuMemAddressFree, cuMemUnmap
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, size_t))fn)(p, size));
}

static int call_memMap(void *fn, uintptr_t ctx, CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h) {
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))fn)(p, size, 0, h, 0));
}

static int call_memSetAccess(void *fn, uintptr_t ctx, CUdeviceptr p, size_t size, int dev) {
	HcMemAccessDesc d;
	memset(&d, 0, sizeof d);
	d.location.type = HC_LOCATION_DEVICE;
	d.location.id = dev;
	d.flags = HC_PROT_READWRITE;
	HC_CALL(ctx, ((CUresult (*)(CUdeviceptr, size_t, const HcMemAccessDesc *, size_t))fn)(p, size, &d, 1));
}

static int call_memExportFD(void *fn, uintptr_t ctx, int *fd, CUmemGenericAllocationHandle h) {
	HC_CALL(ctx, ((CUresult (*)(void *, CUmemGenericAllocationHandle, int, unsigned long long))fn)(fd, h, HC_HANDLE_POSIX_FD, 0));
}

static int call_memImportFD(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle *h, int fd) {
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle *, void *, int))fn)(h, (void *)(uintptr_t)fd, HC_HANDLE_POSIX_FD));
}

static int call_multicastGranularity(void *fn, uintptr_t ctx, size_t *g, unsigned int devices, size_t size) {
	HcMulticastObjectProp p;
	hc_multicastProp(&p, devices, size);
	HC_CALL(ctx, ((CUresult (*)(size_t *, const HcMulticastObjectProp *, int))fn)(g, &p, 0));
}

static int call_multicastCreate(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle *h, unsigned int devices, size_t size) {
	HcMulticastObjectProp p;
	hc_multicastProp(&p, devices, size);
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle *, const HcMulticastObjectProp *))fn)(h, &p));
}

static int call_multicastAddDevice(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle mc, int dev) {
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle, CUdevice))fn)(mc, dev));
}

static int call_multicastBindMem(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle mc, CUmemGenericAllocationHandle mem, size_t size) {
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle, size_t, CUmemGenericAllocationHandle, size_t, size_t, unsigned long long))fn)(
		mc, 0, mem, 0, size, 0));
}

static int call_multicastUnbind(void *fn, uintptr_t ctx, CUmemGenericAllocationHandle mc, int dev, size_t size) {
	HC_CALL(ctx, ((CUresult (*)(CUmemGenericAllocationHandle, CUdevice, size_t, size_t))fn)(mc, dev, 0, size));
}

// call_tensorMapEncodeTiled encodes a 2-D tiled tensor map. The driver
// looks the base address up in the current context: on a thread with none
// current it fails with CUDA_ERROR_INVALID_CONTEXT.
static int call_tensorMapEncodeTiled(void *fn, uintptr_t ctx, void *map, int dtype, unsigned long long base,
		const unsigned long long *dims, const unsigned long long *stride, const unsigned int *box,
		const unsigned int *elemStrides, int swizzle, int l2promo) {
	HC_CALL(ctx, ((CUresult (*)(void *, int, unsigned int, void *, const unsigned long long *, const unsigned long long *,
			const unsigned int *, const unsigned int *, int, int, int, int))fn)(
		map, dtype, 2, (void *)(uintptr_t)base, dims, stride, box, elemStrides, 0, swizzle, l2promo, 0));
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// cuDriver is libcuda.so.1 with its entry points resolved.
type cuDriver struct {
	lib     *dl.Library
	gpa     unsafe.Pointer    // cuGetProcAddress_v2, nil on drivers before 12.0
	symbols map[string]string // base name -> the symbol resolved, for messages
	fn      entryPoints
}

// entryPoints are the resolved driver functions.
type entryPoints struct {
	init, driverGetVersion, getErrorName, getErrorString                          unsafe.Pointer
	deviceGetCount, deviceGet, deviceGetAttribute, deviceGetName, deviceGetPCIBus unsafe.Pointer
	deviceTotalMem, deviceCanAccessPeer, deviceGetP2PAttribute                    unsafe.Pointer
	primaryCtxRetain, primaryCtxRelease, ctxGetCurrent, ctxSetCurrent             unsafe.Pointer
	ctxGetStreamPriorityRange                                                     unsafe.Pointer
	memAlloc, memFree, memGetAddressRange                                         unsafe.Pointer
	memcpyHtoDAsync, memcpyDtoHAsync, memcpyAsync, memsetD32Async                 unsafe.Pointer
	ipcGetMemHandle, ipcOpenMemHandle, ipcCloseMemHandle                          unsafe.Pointer
	streamCreateWithPriority, streamDestroy, streamQuery, streamWaitEvent         unsafe.Pointer
	streamWaitValue32, streamWriteValue32                                         unsafe.Pointer
	eventCreate, eventRecord, eventQuery, eventDestroy, eventElapsedTime          unsafe.Pointer
	moduleLoadData, moduleGetFunction, moduleUnload, launchKernel                 unsafe.Pointer
	funcSetAttribute, funcGetAttribute                                            unsafe.Pointer
	tensorMapEncodeTiled                                                          unsafe.Pointer // nil before CUDA 12.0
	// Graphs: all nil where any is missing (capture is then unavailable).
	streamIsCapturing, streamBeginCapture, streamEndCapture       unsafe.Pointer
	graphInstantiate, graphLaunch, graphExecDestroy, graphDestroy unsafe.Pointer
	vmm                                                           vmmEntryPoints
}

// vmmEntryPoints are the virtual memory management and multicast calls,
// each nil where the driver lacks it (multicast: before CUDA 12.1).
type vmmEntryPoints struct {
	memGetAllocationGranularity, memCreate, memRelease, memAddressReserve, memAddressFree           unsafe.Pointer
	memMap, memUnmap, memSetAccess, memExportToShareableHandle, memImportFromShareableHandle        unsafe.Pointer
	multicastGetGranularity, multicastCreate, multicastAddDevice, multicastBindMem, multicastUnbind unsafe.Pointer
}

var _ api = (*cuDriver)(nil)

var driverOnce = sync.OnceValues(loadCUDA)

// loadDriver returns the process's driver, loading it on first use. The
// outcome (including failure) is kept: cuInit's verdict does not change
// within a process.
func loadDriver() (api, error) {
	drv, err := driverOnce()
	if err != nil {
		return nil, err
	}
	return drv, nil
}

// entry is one driver entry point: its base name and ABI version for
// cuGetProcAddress_v2, and the versioned export name for dlsym.
type entry struct {
	dst     *unsafe.Pointer
	base    string
	version int
	export  string
}

func loadCUDA() (*cuDriver, error) {
	lib, err := dl.Open("libcuda.so.1")
	if err != nil {
		return nil, fmt.Errorf("cuda: no CUDA driver: libcuda.so.1 could not be loaded: %w (%w)", err, device.ErrNotSupported)
	}
	c := &cuDriver{lib: lib, symbols: make(map[string]string)}
	// cuGetProcAddress_v2 (CUDA 12.0+) is looked up by its versioned name;
	// without it every entry point comes from dlsym of its versioned export.
	if p, err := lib.Sym("cuGetProcAddress_v2"); err == nil {
		c.gpa = p
	}
	if err := c.initDriver(); err != nil {
		return nil, err
	}
	if err := c.resolveCore(); err != nil {
		return nil, err
	}
	if err := c.resolveElapsedTime(); err != nil {
		return nil, err
	}
	// Tensor maps (TMA) came with CUDA 12.0; without them only the kernels
	// that take one are unavailable.
	c.fn.tensorMapEncodeTiled, _ = c.resolve("cuTensorMapEncodeTiled", abiTensorMap, "cuTensorMapEncodeTiled")
	// Virtual memory management and multicast: without them only the NVLS
	// engine is unavailable. Resolving an entry point calls nothing.
	c.resolveVMM()
	c.resolveGraphs()
	C.hc_setContextCalls(c.fn.ctxGetCurrent, c.fn.ctxSetCurrent)
	return c, nil
}

// initDriver resolves and runs cuInit, naming its failure where it can.
func (c *cuDriver) initDriver() error {
	var err error
	// cuInit has a single version; it must run before anything else.
	if c.fn.init, err = c.resolve("cuInit", abiBase, "cuInit"); err != nil {
		return err
	}
	if r := result(C.call_init(c.fn.init, 0)); r != cudaSuccess {
		// cuGetErrorName may still be resolvable to name the failure.
		c.fn.getErrorName, _ = c.resolve("cuGetErrorName", abiErrors, "cuGetErrorName")
		c.fn.getErrorString, _ = c.resolve("cuGetErrorString", abiErrors, "cuGetErrorString")
		ierr := newError(c, r, "cuInit(0)")
		return &unusable{msg: "cuda: no usable CUDA driver: " + strings.TrimPrefix(ierr.Error(), "cuda: "), err: ierr}
	}
	return nil
}

// resolveCore resolves the entry points every device needs: devices,
// contexts, memory, IPC, streams, events, modules and launches.
func (c *cuDriver) resolveCore() error {
	entries := []entry{
		{&c.fn.driverGetVersion, "cuDriverGetVersion", 2020, "cuDriverGetVersion"},
		{&c.fn.getErrorName, "cuGetErrorName", abiErrors, "cuGetErrorName"},
		{&c.fn.getErrorString, "cuGetErrorString", abiErrors, "cuGetErrorString"},
		{&c.fn.deviceGetCount, "cuDeviceGetCount", abiBase, "cuDeviceGetCount"},
		{&c.fn.deviceGet, "cuDeviceGet", abiBase, "cuDeviceGet"},
		{&c.fn.deviceGetAttribute, "cuDeviceGetAttribute", abiBase, "cuDeviceGetAttribute"},
		{&c.fn.deviceGetName, "cuDeviceGetName", abiBase, "cuDeviceGetName"},
		{&c.fn.deviceGetPCIBus, "cuDeviceGetPCIBusId", abiIPC, "cuDeviceGetPCIBusId"},
		{&c.fn.deviceTotalMem, "cuDeviceTotalMem", abiMemory, "cuDeviceTotalMem_v2"},
		{&c.fn.deviceCanAccessPeer, "cuDeviceCanAccessPeer", abiV4, "cuDeviceCanAccessPeer"},
		{&c.fn.deviceGetP2PAttribute, "cuDeviceGetP2PAttribute", abiP2PAttr, "cuDeviceGetP2PAttribute"},
		{&c.fn.primaryCtxRetain, "cuDevicePrimaryCtxRetain", abiPrimaryCtx, "cuDevicePrimaryCtxRetain"},
		{&c.fn.primaryCtxRelease, "cuDevicePrimaryCtxRelease", abiV11, "cuDevicePrimaryCtxRelease_v2"},
		{&c.fn.ctxGetCurrent, "cuCtxGetCurrent", abiV4, "cuCtxGetCurrent"},
		{&c.fn.ctxSetCurrent, "cuCtxSetCurrent", abiV4, "cuCtxSetCurrent"},
		{&c.fn.ctxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", abiPriority, "cuCtxGetStreamPriorityRange"},
		{&c.fn.memAlloc, "cuMemAlloc", abiMemory, "cuMemAlloc_v2"},
		{&c.fn.memFree, "cuMemFree", abiMemory, "cuMemFree_v2"},
		{&c.fn.memGetAddressRange, "cuMemGetAddressRange", abiMemory, "cuMemGetAddressRange_v2"},
		{&c.fn.memcpyHtoDAsync, "cuMemcpyHtoDAsync", abiMemory, "cuMemcpyHtoDAsync_v2"},
		{&c.fn.memcpyDtoHAsync, "cuMemcpyDtoHAsync", abiMemory, "cuMemcpyDtoHAsync_v2"},
		{&c.fn.memcpyAsync, "cuMemcpyAsync", abiV4, "cuMemcpyAsync"},
		{&c.fn.memsetD32Async, "cuMemsetD32Async", abiMemory, "cuMemsetD32Async"},
		{&c.fn.ipcGetMemHandle, "cuIpcGetMemHandle", abiIPC, "cuIpcGetMemHandle"},
		{&c.fn.ipcOpenMemHandle, "cuIpcOpenMemHandle", abiV11, "cuIpcOpenMemHandle_v2"},
		{&c.fn.ipcCloseMemHandle, "cuIpcCloseMemHandle", abiIPC, "cuIpcCloseMemHandle"},
		{&c.fn.streamCreateWithPriority, "cuStreamCreateWithPriority", abiPriority, "cuStreamCreateWithPriority"},
		{&c.fn.streamDestroy, "cuStreamDestroy", abiV4, "cuStreamDestroy_v2"},
		{&c.fn.streamQuery, "cuStreamQuery", abiBase, "cuStreamQuery"},
		{&c.fn.streamWaitEvent, "cuStreamWaitEvent", abiMemory, "cuStreamWaitEvent"},
		{&c.fn.streamWaitValue32, "cuStreamWaitValue32", abiStreamMemOp, "cuStreamWaitValue32_v2"},
		{&c.fn.streamWriteValue32, "cuStreamWriteValue32", abiStreamMemOp, "cuStreamWriteValue32_v2"},
		{&c.fn.eventCreate, "cuEventCreate", abiBase, "cuEventCreate"},
		{&c.fn.eventRecord, "cuEventRecord", abiBase, "cuEventRecord"},
		{&c.fn.eventQuery, "cuEventQuery", abiBase, "cuEventQuery"},
		{&c.fn.eventDestroy, "cuEventDestroy", abiV4, "cuEventDestroy_v2"},
		{&c.fn.moduleLoadData, "cuModuleLoadData", abiBase, "cuModuleLoadData"},
		{&c.fn.moduleGetFunction, "cuModuleGetFunction", abiBase, "cuModuleGetFunction"},
		{&c.fn.moduleUnload, "cuModuleUnload", abiBase, "cuModuleUnload"},
		{&c.fn.launchKernel, "cuLaunchKernel", abiV4, "cuLaunchKernel"},
		{&c.fn.funcSetAttribute, "cuFuncSetAttribute", abiFuncAttr, "cuFuncSetAttribute"},
		{&c.fn.funcGetAttribute, "cuFuncGetAttribute", abiV4, "cuFuncGetAttribute"},
	}
	for _, e := range entries {
		p, err := c.resolve(e.base, e.version, e.export)
		if err != nil {
			return err
		}
		*e.dst = p
	}
	return nil
}

// resolveElapsedTime resolves cuEventElapsedTime, the newer version first.
func (c *cuDriver) resolveElapsedTime() error {
	// cuEventElapsedTime_v2 (12.8+) has the signature of the original, which
	// older drivers have instead.
	if p, err := c.resolve("cuEventElapsedTime", abiElapsedV2, "cuEventElapsedTime_v2"); err == nil {
		c.fn.eventElapsedTime = p
	} else if p, err2 := c.resolve("cuEventElapsedTime", abiBase, "cuEventElapsedTime"); err2 == nil {
		c.fn.eventElapsedTime = p
	} else {
		return err
	}
	return nil
}

// resolveVMM resolves the virtual memory and multicast entry points that
// the driver has; those it lacks stay nil.
func (c *cuDriver) resolveVMM() {
	v := &c.fn.vmm
	for _, e := range []entry{
		{&v.memGetAllocationGranularity, "cuMemGetAllocationGranularity", abiVMM, "cuMemGetAllocationGranularity"},
		{&v.memCreate, "cuMemCreate", abiVMM, "cuMemCreate"},
		{&v.memRelease, "cuMemRelease", abiVMM, "cuMemRelease"},
		{&v.memAddressReserve, "cuMemAddressReserve", abiVMM, "cuMemAddressReserve"},
		{&v.memAddressFree, "cuMemAddressFree", abiVMM, "cuMemAddressFree"},
		{&v.memMap, "cuMemMap", abiVMM, "cuMemMap"},
		{&v.memUnmap, "cuMemUnmap", abiVMM, "cuMemUnmap"},
		{&v.memSetAccess, "cuMemSetAccess", abiVMM, "cuMemSetAccess"},
		{&v.memExportToShareableHandle, "cuMemExportToShareableHandle", abiVMM, "cuMemExportToShareableHandle"},
		{&v.memImportFromShareableHandle, "cuMemImportFromShareableHandle", abiVMM, "cuMemImportFromShareableHandle"},
		{&v.multicastGetGranularity, "cuMulticastGetGranularity", abiMulticast, "cuMulticastGetGranularity"},
		{&v.multicastCreate, "cuMulticastCreate", abiMulticast, "cuMulticastCreate"},
		{&v.multicastAddDevice, "cuMulticastAddDevice", abiMulticast, "cuMulticastAddDevice"},
		{&v.multicastBindMem, "cuMulticastBindMem", abiMulticast, "cuMulticastBindMem"},
		{&v.multicastUnbind, "cuMulticastUnbind", abiMulticast, "cuMulticastUnbind"},
	} {
		*e.dst, _ = c.resolve(e.base, e.version, e.export)
	}
}

// resolveGraphs finds the graph entry points, all or none: without them
// no stream is ever capturing and BeginCapture is not supported.
func (c *cuDriver) resolveGraphs() {
	graphs := []entry{
		{&c.fn.streamIsCapturing, "cuStreamIsCapturing", abiGraphs, "cuStreamIsCapturing"},
		{&c.fn.streamBeginCapture, "cuStreamBeginCapture", abiCaptureMode, "cuStreamBeginCapture_v2"},
		{&c.fn.streamEndCapture, "cuStreamEndCapture", abiGraphs, "cuStreamEndCapture"},
		{&c.fn.graphInstantiate, "cuGraphInstantiateWithFlags", abiGraphFlags, "cuGraphInstantiateWithFlags"},
		{&c.fn.graphLaunch, "cuGraphLaunch", abiGraphs, "cuGraphLaunch"},
		{&c.fn.graphExecDestroy, "cuGraphExecDestroy", abiGraphs, "cuGraphExecDestroy"},
		{&c.fn.graphDestroy, "cuGraphDestroy", abiGraphs, "cuGraphDestroy"},
	}
	for _, e := range graphs {
		p, err := c.resolve(e.base, e.version, e.export)
		if err != nil {
			for _, e := range graphs {
				*e.dst = nil
			}
			return
		}
		*e.dst = p
	}
}

// resolve finds one entry point: cuGetProcAddress_v2(base, version) where
// the driver has it, else dlsym of the versioned export name.
func (c *cuDriver) resolve(base string, version int, export string) (unsafe.Pointer, error) {
	var why string
	if c.gpa != nil {
		cname := C.CString(base)
		var res, status C.int
		p := C.call_getProcAddress(c.gpa, cname, C.int(version), getProcAddressDefault, &res, &status)
		C.free(unsafe.Pointer(cname))
		if res == 0 && status == procAddressSuccess && p != nil {
			c.symbols[base] = export
			return p, nil
		}
		why = fmt.Sprintf("cuGetProcAddress_v2(%s, %d): CUresult %d, status %d; ", base, version, int(res), int(status))
	}
	p, err := c.lib.Sym(export)
	if err != nil {
		return nil, fmt.Errorf("cuda: the CUDA driver lacks %s (%s%v): %w", export, why, err, device.ErrNotSupported)
	}
	c.symbols[base] = export
	return p, nil
}

func (c *cuDriver) symbol(base string) string {
	if s, ok := c.symbols[base]; ok {
		return s
	}
	return base
}

func (c *cuDriver) errorName(r result) string {
	return c.errorText(c.fn.getErrorName, r)
}

func (c *cuDriver) errorString(r result) string {
	return c.errorText(c.fn.getErrorString, r)
}

func (c *cuDriver) errorText(fn unsafe.Pointer, r result) string {
	if fn == nil {
		return ""
	}
	var res C.int
	s := C.call_errorText(fn, C.int(r), &res)
	if res != 0 || s == nil {
		return ""
	}
	return C.GoString(s)
}

func (c *cuDriver) driverVersion() (int, result) {
	var v C.int
	r := result(C.call_intOut(c.fn.driverGetVersion, &v))
	return int(v), r
}

func (c *cuDriver) deviceCount() (int, result) {
	var n C.int
	r := result(C.call_intOut(c.fn.deviceGetCount, &n))
	return int(n), r
}

func (c *cuDriver) deviceGet(ordinal int) (int, result) {
	var dev C.CUdevice
	r := result(C.call_deviceGet(c.fn.deviceGet, &dev, C.int(ordinal)))
	return int(dev), r
}

func (c *cuDriver) deviceAttribute(dev, attr int) (int, result) {
	var v C.int
	r := result(C.call_deviceGetAttribute(c.fn.deviceGetAttribute, &v, C.int(attr), C.CUdevice(dev)))
	return int(v), r
}

func (c *cuDriver) deviceString(fn unsafe.Pointer, dev int) (string, result) {
	var buf [256]C.char
	r := result(C.call_deviceString(fn, &buf[0], C.int(len(buf)), C.CUdevice(dev)))
	if r != cudaSuccess {
		return "", r
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0]), r
}

func (c *cuDriver) deviceName(dev int) (string, result) {
	return c.deviceString(c.fn.deviceGetName, dev)
}

func (c *cuDriver) devicePCIBusID(dev int) (string, result) {
	return c.deviceString(c.fn.deviceGetPCIBus, dev)
}

func (c *cuDriver) deviceTotalMem(dev int) (int64, result) {
	var n C.size_t
	r := result(C.call_deviceTotalMem(c.fn.deviceTotalMem, &n, C.CUdevice(dev)))
	return int64(n), r
}

func (c *cuDriver) deviceCanAccessPeer(dev, peer int) (bool, result) {
	var can C.int
	r := result(C.call_deviceCanAccessPeer(c.fn.deviceCanAccessPeer, &can, C.CUdevice(dev), C.CUdevice(peer)))
	return can != 0, r
}

func (c *cuDriver) deviceP2PAttribute(attr, src, dst int) (int, result) {
	var v C.int
	r := result(C.call_deviceGetP2PAttribute(c.fn.deviceGetP2PAttribute, &v, C.int(attr), C.CUdevice(src), C.CUdevice(dst)))
	return int(v), r
}

func (c *cuDriver) primaryCtxRetain(dev int) (uintptr, result) {
	var ctx C.uintptr_t
	r := result(C.call_primaryCtxRetain(c.fn.primaryCtxRetain, &ctx, C.CUdevice(dev)))
	return uintptr(ctx), r
}

func (c *cuDriver) primaryCtxRelease(dev int) result {
	return result(C.call_primaryCtxRelease(c.fn.primaryCtxRelease, C.CUdevice(dev)))
}

func (c *cuDriver) streamPriorityRange(ctx uintptr) (int, int, result) {
	var least, greatest C.int
	r := result(C.call_ctxGetStreamPriorityRange(c.fn.ctxGetStreamPriorityRange, C.uintptr_t(ctx), &least, &greatest))
	return int(least), int(greatest), r
}

func (c *cuDriver) memAlloc(ctx uintptr, size int64) (device.Ptr, result) {
	var p C.CUdeviceptr
	r := result(C.call_memAlloc(c.fn.memAlloc, C.uintptr_t(ctx), &p, C.size_t(size)))
	return device.Ptr(p), r
}

func (c *cuDriver) memFree(ctx uintptr, p device.Ptr) result {
	return result(C.call_ptr(c.fn.memFree, C.uintptr_t(ctx), C.CUdeviceptr(p)))
}

func (c *cuDriver) memAddressRange(ctx uintptr, p device.Ptr) (device.Ptr, int64, result) {
	var base C.CUdeviceptr
	var size C.size_t
	r := result(C.call_memGetAddressRange(c.fn.memGetAddressRange, C.uintptr_t(ctx), &base, &size, C.CUdeviceptr(p)))
	return device.Ptr(base), int64(size), r
}

// memcpyHtoDAsync passes the Go slice's memory to the driver: it holds no Go
// pointers, and the driver has staged pageable memory by the time the call
// returns (the caller also waits for the stream before returning).
func (c *cuDriver) memcpyHtoDAsync(ctx uintptr, dst device.Ptr, src []byte, stream uintptr) result {
	return result(C.call_memcpyHtoDAsync(c.fn.memcpyHtoDAsync, C.uintptr_t(ctx), C.CUdeviceptr(dst),
		unsafe.Pointer(&src[0]), C.size_t(len(src)), C.uintptr_t(stream)))
}

// memcpyDtoHAsync: to pageable memory the call returns once the copy is done.
func (c *cuDriver) memcpyDtoHAsync(ctx uintptr, dst []byte, src device.Ptr, stream uintptr) result {
	return result(C.call_memcpyDtoHAsync(c.fn.memcpyDtoHAsync, C.uintptr_t(ctx), unsafe.Pointer(&dst[0]),
		C.CUdeviceptr(src), C.size_t(len(dst)), C.uintptr_t(stream)))
}

func (c *cuDriver) memcpyAsync(ctx uintptr, dst, src device.Ptr, n int64, stream uintptr) result {
	return result(C.call_memcpyAsync(c.fn.memcpyAsync, C.uintptr_t(ctx), C.CUdeviceptr(dst), C.CUdeviceptr(src),
		C.size_t(n), C.uintptr_t(stream)))
}

func (c *cuDriver) memsetD32Async(ctx uintptr, dst device.Ptr, v uint32, count int64, stream uintptr) result {
	return result(C.call_memsetD32Async(c.fn.memsetD32Async, C.uintptr_t(ctx), C.CUdeviceptr(dst), C.uint(v),
		C.size_t(count), C.uintptr_t(stream)))
}

func (c *cuDriver) ipcGetMemHandle(ctx uintptr, p device.Ptr) ([ipcHandleSize]byte, result) {
	var h [ipcHandleSize]byte
	r := result(C.call_ipcGetMemHandle(c.fn.ipcGetMemHandle, C.uintptr_t(ctx), (*C.uchar)(unsafe.Pointer(&h[0])), C.CUdeviceptr(p)))
	return h, r
}

func (c *cuDriver) ipcOpenMemHandle(ctx uintptr, h [ipcHandleSize]byte, flags uint32) (device.Ptr, result) {
	var p C.CUdeviceptr
	r := result(C.call_ipcOpenMemHandle(c.fn.ipcOpenMemHandle, C.uintptr_t(ctx), &p, (*C.uchar)(unsafe.Pointer(&h[0])), C.uint(flags)))
	return device.Ptr(p), r
}

func (c *cuDriver) ipcCloseMemHandle(ctx uintptr, p device.Ptr) result {
	return result(C.call_ptr(c.fn.ipcCloseMemHandle, C.uintptr_t(ctx), C.CUdeviceptr(p)))
}

func (c *cuDriver) streamCreateWithPriority(ctx uintptr, flags uint32, priority int) (uintptr, result) {
	var s C.uintptr_t
	r := result(C.call_streamCreateWithPriority(c.fn.streamCreateWithPriority, C.uintptr_t(ctx), &s, C.uint(flags), C.int(priority)))
	return uintptr(s), r
}

func (c *cuDriver) streamDestroy(ctx, stream uintptr) result {
	return result(C.call_stream(c.fn.streamDestroy, C.uintptr_t(ctx), C.uintptr_t(stream)))
}

func (c *cuDriver) streamQuery(ctx, stream uintptr) result {
	return result(C.call_stream(c.fn.streamQuery, C.uintptr_t(ctx), C.uintptr_t(stream)))
}

func (c *cuDriver) streamWaitEvent(ctx, stream, event uintptr) result {
	return result(C.call_streamWaitEvent(c.fn.streamWaitEvent, C.uintptr_t(ctx), C.uintptr_t(stream), C.uintptr_t(event), 0))
}

func (c *cuDriver) hasGraphs() bool { return c.fn.graphLaunch != nil }

func (c *cuDriver) hasTensorMaps() bool { return c.fn.tensorMapEncodeTiled != nil }

func (c *cuDriver) streamIsCapturing(ctx, stream uintptr) (bool, result) {
	if c.fn.streamIsCapturing == nil {
		return false, cudaSuccess
	}
	var status C.int
	r := result(C.call_streamIsCapturing(c.fn.streamIsCapturing, C.uintptr_t(ctx), C.uintptr_t(stream), &status))
	return status != captureStatusNone, r
}

func (c *cuDriver) streamBeginCapture(ctx, stream uintptr, mode int) result {
	return result(C.call_streamBeginCapture(c.fn.streamBeginCapture, C.uintptr_t(ctx), C.uintptr_t(stream), C.int(mode)))
}

func (c *cuDriver) streamEndCapture(ctx, stream uintptr) (uintptr, result) {
	var g C.uintptr_t
	r := result(C.call_handleOut(c.fn.streamEndCapture, C.uintptr_t(ctx), C.uintptr_t(stream), &g))
	return uintptr(g), r
}

func (c *cuDriver) graphInstantiate(ctx, graph uintptr) (uintptr, result) {
	var e C.uintptr_t
	r := result(C.call_graphInstantiate(c.fn.graphInstantiate, C.uintptr_t(ctx), C.uintptr_t(graph), &e))
	return uintptr(e), r
}

func (c *cuDriver) graphLaunch(ctx, exec, stream uintptr) result {
	return result(C.call_handleStream(c.fn.graphLaunch, C.uintptr_t(ctx), C.uintptr_t(exec), C.uintptr_t(stream)))
}

func (c *cuDriver) graphExecDestroy(ctx, exec uintptr) result {
	return result(C.call_handle(c.fn.graphExecDestroy, C.uintptr_t(ctx), C.uintptr_t(exec)))
}

func (c *cuDriver) graphDestroy(ctx, graph uintptr) result {
	return result(C.call_handle(c.fn.graphDestroy, C.uintptr_t(ctx), C.uintptr_t(graph)))
}

func (c *cuDriver) streamWaitValue32(ctx, stream uintptr, addr device.Ptr, v uint32, flags uint32) result {
	return result(C.call_streamValue32(c.fn.streamWaitValue32, C.uintptr_t(ctx), C.uintptr_t(stream), C.CUdeviceptr(addr),
		C.uint32_t(v), C.uint(flags)))
}

func (c *cuDriver) streamWriteValue32(ctx, stream uintptr, addr device.Ptr, v uint32, flags uint32) result {
	return result(C.call_streamValue32(c.fn.streamWriteValue32, C.uintptr_t(ctx), C.uintptr_t(stream), C.CUdeviceptr(addr),
		C.uint32_t(v), C.uint(flags)))
}

func (c *cuDriver) eventCreate(ctx uintptr, flags uint32) (uintptr, result) {
	var e C.uintptr_t
	r := result(C.call_eventCreate(c.fn.eventCreate, C.uintptr_t(ctx), &e, C.uint(flags)))
	return uintptr(e), r
}

func (c *cuDriver) eventRecord(ctx, event, stream uintptr) result {
	return result(C.call_eventRecord(c.fn.eventRecord, C.uintptr_t(ctx), C.uintptr_t(event), C.uintptr_t(stream)))
}

func (c *cuDriver) eventQuery(ctx, event uintptr) result {
	return result(C.call_event(c.fn.eventQuery, C.uintptr_t(ctx), C.uintptr_t(event)))
}

func (c *cuDriver) eventDestroy(ctx, event uintptr) result {
	return result(C.call_event(c.fn.eventDestroy, C.uintptr_t(ctx), C.uintptr_t(event)))
}

func (c *cuDriver) eventElapsedTime(ctx, start, end uintptr) (float32, result) {
	var ms C.float
	r := result(C.call_eventElapsedTime(c.fn.eventElapsedTime, C.uintptr_t(ctx), &ms, C.uintptr_t(start), C.uintptr_t(end)))
	return float32(ms), r
}

// moduleLoadData hands the driver a copy of the image in C memory (malloc's
// alignment suits the ELF headers the driver reads in place).
func (c *cuDriver) moduleLoadData(ctx uintptr, image []byte) (uintptr, result) {
	if len(image) == 0 {
		return 0, cudaErrorInvalidValue
	}
	cimage := C.CBytes(image)
	defer C.free(cimage)
	var m C.uintptr_t
	r := result(C.call_moduleLoadData(c.fn.moduleLoadData, C.uintptr_t(ctx), &m, cimage))
	return uintptr(m), r
}

func (c *cuDriver) moduleGetFunction(ctx, module uintptr, name string) (uintptr, result) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.uintptr_t
	r := result(C.call_moduleGetFunction(c.fn.moduleGetFunction, C.uintptr_t(ctx), &f, C.uintptr_t(module), cname))
	return uintptr(f), r
}

func (c *cuDriver) moduleUnload(ctx, module uintptr) result {
	return result(C.call_moduleUnload(c.fn.moduleUnload, C.uintptr_t(ctx), C.uintptr_t(module)))
}

func (c *cuDriver) launchKernel(ctx, f uintptr, grid, block, sharedBytes uint32, stream uintptr, args []byte, offsets []int64) result {
	var p *C.uchar
	var o *C.longlong
	if len(offsets) > 0 {
		p = (*C.uchar)(unsafe.Pointer(&args[0]))
		o = (*C.longlong)(unsafe.Pointer(&offsets[0]))
	}
	return result(C.call_launchKernel(c.fn.launchKernel, C.uintptr_t(ctx), C.uintptr_t(f), C.uint(grid), C.uint(block),
		C.uint(sharedBytes), C.uintptr_t(stream), p, C.size_t(len(args)), o, C.int(len(offsets))))
}

func (c *cuDriver) funcSetAttribute(ctx, f uintptr, attr, value int) result {
	return result(C.call_funcSetAttribute(c.fn.funcSetAttribute, C.uintptr_t(ctx), C.uintptr_t(f), C.int(attr), C.int(value)))
}

func (c *cuDriver) funcGetAttribute(ctx, f uintptr, attr int) (int, result) {
	var v C.int
	r := result(C.call_funcGetAttribute(c.fn.funcGetAttribute, C.uintptr_t(ctx), &v, C.int(attr), C.uintptr_t(f)))
	return int(v), r
}

func (c *cuDriver) tensorMapEncodeTiled(ctx uintptr, dtype int, base device.Ptr, dims, stride [2]uint64, box [2]uint32, swizzle, l2promo int) ([tensorMapSize]byte, result) {
	var out [tensorMapSize]byte
	if c.fn.tensorMapEncodeTiled == nil {
		return out, cudaErrorNotSupported
	}
	// The map is written into C memory 64-byte aligned, as the driver
	// requires, then copied out.
	m := C.aligned_alloc(64, tensorMapSize)
	if m == nil {
		return out, cudaErrorOutOfMemory
	}
	defer C.free(m)
	cdims := [2]C.ulonglong{C.ulonglong(dims[0]), C.ulonglong(dims[1])}
	cstride := [1]C.ulonglong{C.ulonglong(stride[1])}
	cbox := [2]C.uint{C.uint(box[0]), C.uint(box[1])}
	ones := [2]C.uint{1, 1}
	r := result(C.call_tensorMapEncodeTiled(c.fn.tensorMapEncodeTiled, C.uintptr_t(ctx), m, C.int(dtype), C.ulonglong(base),
		&cdims[0], &cstride[0], &cbox[0], &ones[0], C.int(swizzle), C.int(l2promo)))
	copy(out[:], unsafe.Slice((*byte)(m), tensorMapSize))
	return out, r
}

// The virtual memory management and multicast calls report
// CUDA_ERROR_NOT_SUPPORTED where the driver lacks the entry point.

func (c *cuDriver) memGetAllocationGranularity(ctx uintptr, dev int) (int64, result) {
	if c.fn.vmm.memGetAllocationGranularity == nil {
		return 0, cudaErrorNotSupported
	}
	var g C.size_t
	r := result(C.call_memGetAllocationGranularity(c.fn.vmm.memGetAllocationGranularity, C.uintptr_t(ctx), &g, C.int(dev)))
	return int64(g), r
}

func (c *cuDriver) memCreate(ctx uintptr, dev int, size int64) (uint64, result) {
	if c.fn.vmm.memCreate == nil {
		return 0, cudaErrorNotSupported
	}
	var h C.CUmemGenericAllocationHandle
	r := result(C.call_memCreate(c.fn.vmm.memCreate, C.uintptr_t(ctx), &h, C.size_t(size), C.int(dev)))
	return uint64(h), r
}

func (c *cuDriver) memRelease(ctx uintptr, h uint64) result {
	if c.fn.vmm.memRelease == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_memHandle(c.fn.vmm.memRelease, C.uintptr_t(ctx), C.CUmemGenericAllocationHandle(h)))
}

func (c *cuDriver) memAddressReserve(ctx uintptr, size, align int64) (device.Ptr, result) {
	if c.fn.vmm.memAddressReserve == nil {
		return 0, cudaErrorNotSupported
	}
	var p C.CUdeviceptr
	r := result(C.call_memAddressReserve(c.fn.vmm.memAddressReserve, C.uintptr_t(ctx), &p, C.size_t(size), C.size_t(align)))
	return device.Ptr(p), r
}

func (c *cuDriver) memAddressFree(ctx uintptr, p device.Ptr, size int64) result {
	if c.fn.vmm.memAddressFree == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_ptrSize(c.fn.vmm.memAddressFree, C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(size)))
}

func (c *cuDriver) memMap(ctx uintptr, p device.Ptr, size int64, h uint64) result {
	if c.fn.vmm.memMap == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_memMap(c.fn.vmm.memMap, C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(size), C.CUmemGenericAllocationHandle(h)))
}

func (c *cuDriver) memUnmap(ctx uintptr, p device.Ptr, size int64) result {
	if c.fn.vmm.memUnmap == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_ptrSize(c.fn.vmm.memUnmap, C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(size)))
}

func (c *cuDriver) memSetAccess(ctx uintptr, p device.Ptr, size int64, dev int) result {
	if c.fn.vmm.memSetAccess == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_memSetAccess(c.fn.vmm.memSetAccess, C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(size), C.int(dev)))
}

func (c *cuDriver) memExportToFD(ctx uintptr, h uint64) (int, result) {
	if c.fn.vmm.memExportToShareableHandle == nil {
		return -1, cudaErrorNotSupported
	}
	fd := C.int(-1)
	r := result(C.call_memExportFD(c.fn.vmm.memExportToShareableHandle, C.uintptr_t(ctx), &fd, C.CUmemGenericAllocationHandle(h)))
	return int(fd), r
}

func (c *cuDriver) memImportFromFD(ctx uintptr, fd int) (uint64, result) {
	if c.fn.vmm.memImportFromShareableHandle == nil {
		return 0, cudaErrorNotSupported
	}
	var h C.CUmemGenericAllocationHandle
	r := result(C.call_memImportFD(c.fn.vmm.memImportFromShareableHandle, C.uintptr_t(ctx), &h, C.int(fd)))
	return uint64(h), r
}

func (c *cuDriver) multicastGranularity(ctx uintptr, devices int, size int64) (int64, result) {
	if c.fn.vmm.multicastGetGranularity == nil {
		return 0, cudaErrorNotSupported
	}
	var g C.size_t
	r := result(C.call_multicastGranularity(c.fn.vmm.multicastGetGranularity, C.uintptr_t(ctx), &g, C.uint(devices), C.size_t(size)))
	return int64(g), r
}

func (c *cuDriver) multicastCreate(ctx uintptr, devices int, size int64) (uint64, result) {
	if c.fn.vmm.multicastCreate == nil {
		return 0, cudaErrorNotSupported
	}
	var h C.CUmemGenericAllocationHandle
	r := result(C.call_multicastCreate(c.fn.vmm.multicastCreate, C.uintptr_t(ctx), &h, C.uint(devices), C.size_t(size)))
	return uint64(h), r
}

func (c *cuDriver) multicastAddDevice(ctx uintptr, mc uint64, dev int) result {
	if c.fn.vmm.multicastAddDevice == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_multicastAddDevice(c.fn.vmm.multicastAddDevice, C.uintptr_t(ctx), C.CUmemGenericAllocationHandle(mc), C.int(dev)))
}

func (c *cuDriver) multicastBindMem(ctx uintptr, mc, mem uint64, size int64) result {
	if c.fn.vmm.multicastBindMem == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_multicastBindMem(c.fn.vmm.multicastBindMem, C.uintptr_t(ctx), C.CUmemGenericAllocationHandle(mc),
		C.CUmemGenericAllocationHandle(mem), C.size_t(size)))
}

func (c *cuDriver) multicastUnbind(ctx uintptr, mc uint64, dev int, size int64) result {
	if c.fn.vmm.multicastUnbind == nil {
		return cudaErrorNotSupported
	}
	return result(C.call_multicastUnbind(c.fn.vmm.multicastUnbind, C.uintptr_t(ctx), C.CUmemGenericAllocationHandle(mc), C.int(dev), C.size_t(size)))
}
