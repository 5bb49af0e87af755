//go:build cgo

package nccl

/*
#include <stdlib.h>
#include "cuctx.h"

// Device memory for this package's GPU tests, kept here so the tests need no
// CUDA backend: cgo cannot be used in _test.go files.
typedef struct {
	int (*memAlloc)(uint64_t *p, size_t n);                    // cuMemAlloc_v2
	int (*memFree)(uint64_t p);                                // cuMemFree_v2
	int (*memcpyHtoD)(uint64_t dst, const void *src, size_t n); // cuMemcpyHtoD_v2
	int (*memcpyDtoH)(void *dst, uint64_t src, size_t n);       // cuMemcpyDtoH_v2
	int (*ctxSynchronize)(void);                               // cuCtxSynchronize
	hc_cuda cu;
} hc_devmem;

static void hc_devmem_open(const hc_devmem *m, int ordinal, int *dev, void **ctx, hc_status *st) {
	hc_retain(&m->cu, ordinal, dev, ctx, st);
}

// op: 0 alloc, 1 free, 2 host to device, 3 device to host, 4 synchronize.
static void hc_devmem_op(const hc_devmem *m, void *ctx, int op, uint64_t *p, void *host, size_t n, hc_status *st) {
	void *saved;
	int r = 0;
	const char *call = "";
	if (hc_enter(&m->cu, ctx, &saved, st) != 0) return;
	switch (op) {
	case 0: call = "cuMemAlloc_v2"; r = m->memAlloc(p, n); break;
	case 1: call = "cuMemFree_v2"; r = m->memFree(*p); break;
	case 2: call = "cuMemcpyHtoD_v2"; r = m->memcpyHtoD(*p, host, n); break;
	case 3: call = "cuMemcpyDtoH_v2"; r = m->memcpyDtoH(host, *p, n); break;
	case 4: call = "cuCtxSynchronize"; r = m->ctxSynchronize(); break;
	}
	if (r != 0) hc_cufail(&m->cu, st, call, r);
	hc_leave(&m->cu, ctx, saved);
}

static void hc_devmem_release(const hc_devmem *m, int dev, hc_status *st) {
	int r = m->cu.primaryCtxRelease(dev);
	if (r != 0) hc_cufail(&m->cu, st, "cuDevicePrimaryCtxRelease_v2", r);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// devMem allocates and copies device memory on one device's primary
// context. Only the tests use it.
type devMem struct {
	cuda *dl.Library
	m    *C.hc_devmem
	ctx  unsafe.Pointer
	dev  C.int
}

func openDevMem(ordinal int) (*devMem, error) {
	cuda, err := dl.Open("libcuda.so.1")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrNotSupported, err)
	}
	m := (*C.hc_devmem)(C.calloc(1, C.size_t(unsafe.Sizeof(C.hc_devmem{}))))
	syms := []struct {
		name string
		dst  **[0]byte
	}{
		{"cuMemAlloc_v2", &m.memAlloc}, {"cuMemFree_v2", &m.memFree},
		{"cuMemcpyHtoD_v2", &m.memcpyHtoD}, {"cuMemcpyDtoH_v2", &m.memcpyDtoH},
		{"cuCtxSynchronize", &m.ctxSynchronize},
		{"cuInit", &m.cu.init}, {"cuDeviceGet", &m.cu.deviceGet},
		{"cuDevicePrimaryCtxRetain", &m.cu.primaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &m.cu.primaryCtxRelease},
		{"cuCtxGetCurrent", &m.cu.ctxGetCurrent}, {"cuCtxSetCurrent", &m.cu.ctxSetCurrent},
		{"cuGetErrorName", &m.cu.getErrorName},
	}
	for _, s := range syms {
		p, err := cuda.Sym(s.name)
		if err != nil {
			C.free(unsafe.Pointer(m))
			_ = cuda.Close()
			return nil, err
		}
		*s.dst = (*[0]byte)(p)
	}
	d := &devMem{cuda: cuda, m: m}
	var st C.hc_status
	C.hc_devmem_open(m, C.int(ordinal), &d.dev, &d.ctx, &st)
	if err := statusError("", &st); err != nil {
		C.free(unsafe.Pointer(m))
		_ = cuda.Close()
		return nil, err
	}
	return d, nil
}

func (d *devMem) op(op int, p *device.Ptr, host []byte, n int64) error {
	var st C.hc_status
	var hp unsafe.Pointer
	if len(host) > 0 {
		hp = unsafe.Pointer(&host[0])
	}
	v := C.uint64_t(*p)
	C.hc_devmem_op(d.m, d.ctx, C.int(op), &v, hp, C.size_t(n), &st)
	*p = device.Ptr(v)
	return statusError("", &st)
}

func (d *devMem) alloc(n int64) (device.Ptr, error) {
	var p device.Ptr
	return p, d.op(0, &p, nil, n)
}

func (d *devMem) free(p device.Ptr) error { return d.op(1, &p, nil, 0) }

func (d *devMem) toDevice(dst device.Ptr, src []byte) error {
	return d.op(2, &dst, src, int64(len(src)))
}

func (d *devMem) toHost(dst []byte, src device.Ptr) error {
	return d.op(3, &src, dst, int64(len(dst)))
}

func (d *devMem) sync() error {
	var p device.Ptr
	return d.op(4, &p, nil, 0)
}

func (d *devMem) close() error {
	var st C.hc_status
	C.hc_devmem_release(d.m, d.dev, &st)
	C.free(unsafe.Pointer(d.m))
	err := statusError("", &st)
	_ = d.cuda.Close()
	return err
}
