//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// cuBLAS's few types as cublas_api.h declares them: the status and every
// enum are int-sized, the handle and the stream are pointers. Names carry an
// hcb_ prefix so they cannot meet driver_cgo.go's in the cgo namespace.
typedef int hcb_status;
typedef struct hcb_handle_st *hcb_handle;
typedef struct hcb_stream_st *hcb_stream;

// cuCtxGetCurrent / cuCtxSetCurrent of the loaded driver, set at load: the
// trampolines below make the device's context current exactly as
// driver_cgo.go's hc_enter / hc_leave do (this is a separate C translation
// unit, so they are repeated here, small as they are).
static void *hcb_ctxGetCurrent, *hcb_ctxSetCurrent;

static void hcb_setContextCalls(void *get, void *set) {
	hcb_ctxGetCurrent = get;
	hcb_ctxSetCurrent = set;
}

static int hcb_enter(uintptr_t ctx, void **saved) {
	void *want = (void *)ctx, *cur = NULL;
	int r;
	*saved = want;
	if (want == NULL) {
		return 0;
	}
	r = ((int (*)(void **))hcb_ctxGetCurrent)(&cur);
	if (r != 0) {
		return r;
	}
	if (cur == want) {
		return 0;
	}
	r = ((int (*)(void *))hcb_ctxSetCurrent)(want);
	if (r != 0) {
		return r;
	}
	*saved = cur;
	return 0;
}

static void hcb_leave(uintptr_t ctx, void *saved) {
	if (saved != NULL && saved != (void *)ctx) {
		((int (*)(void *))hcb_ctxSetCurrent)(saved);
	}
}

// HCB_CALL runs one cuBLAS call with ctx current. A failure to make the
// context current is reported in *cuErr (a CUresult), with status -1.
#define HCB_CALL(ctx, cuErr, call) do { \
	void *saved_; \
	int r_ = hcb_enter((ctx), &saved_); \
	*(cuErr) = r_; \
	if (r_ != 0) return -1; \
	r_ = (call); \
	hcb_leave((ctx), saved_); \
	return r_; \
} while (0)

// cublasCreate_v2(cublasHandle_t *handle)
static int hcb_create(void *fn, uintptr_t ctx, uintptr_t *handle, int *cuErr) {
	hcb_handle h = NULL;
	void *saved;
	int r = hcb_enter(ctx, &saved);
	*cuErr = r;
	if (r != 0) {
		return -1;
	}
	r = ((hcb_status (*)(hcb_handle *))fn)(&h);
	hcb_leave(ctx, saved);
	*handle = (uintptr_t)h;
	return r;
}

// cublasDestroy_v2(cublasHandle_t)
static int hcb_destroy(void *fn, uintptr_t ctx, uintptr_t h, int *cuErr) {
	HCB_CALL(ctx, cuErr, ((hcb_status (*)(hcb_handle))fn)((hcb_handle)h));
}

// cublasSetStream_v2(cublasHandle_t, cudaStream_t)
static int hcb_setStream(void *fn, uintptr_t ctx, uintptr_t h, uintptr_t stream, int *cuErr) {
	HCB_CALL(ctx, cuErr, ((hcb_status (*)(hcb_handle, hcb_stream))fn)((hcb_handle)h, (hcb_stream)stream));
}

// cublasSetMathMode(cublasHandle_t, cublasMath_t),
// cublasSetSmCountTarget(cublasHandle_t, int)
static int hcb_setInt(void *fn, uintptr_t ctx, uintptr_t h, int v, int *cuErr) {
	HCB_CALL(ctx, cuErr, ((hcb_status (*)(hcb_handle, int))fn)((hcb_handle)h, v));
}

// cublasGemmEx(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb,
//              int m, int n, int k, const void *alpha,
//              const void *A, cudaDataType Atype, int lda,
//              const void *B, cudaDataType Btype, int ldb, const void *beta,
//              void *C, cudaDataType Ctype, int ldc,
//              cublasComputeType_t computeType, cublasGemmAlgo_t algo)
// with alpha = 1 and beta = 0 as host floats (the default pointer mode;
// CUBLAS_COMPUTE_32F scales in fp32). cuBLAS reads them before returning.
static int hcb_gemmEx(void *fn, uintptr_t ctx, uintptr_t h, int transa, int transb, int m, int n, int k,
		uint64_t a, int atype, int lda, uint64_t b, int btype, int ldb, uint64_t c, int ctype, int ldc,
		int compute, int algo, int *cuErr) {
	const float alpha = 1.0f, beta = 0.0f;
	HCB_CALL(ctx, cuErr, ((hcb_status (*)(hcb_handle, int, int, int, int, int, const void *,
			const void *, int, int, const void *, int, int, const void *, void *, int, int, int, int))fn)(
		(hcb_handle)h, transa, transb, m, n, k, &alpha,
		(const void *)(uintptr_t)a, atype, lda, (const void *)(uintptr_t)b, btype, ldb, &beta,
		(void *)(uintptr_t)c, ctype, ldc, compute, algo));
}

// cublasGetProperty(libraryPropertyType, int *value): no handle, no context.
static int hcb_getProperty(void *fn, int type, int *value) {
	return ((hcb_status (*)(int, int *))fn)(type, value);
}

// hcb_libraryOf returns the file of the shared object that holds sym.
static const char *hcb_libraryOf(void *sym) {
	Dl_info info;
	if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) {
		return NULL;
	}
	return info.dli_fname;
}

// const char *cublasGetStatusString(cublasStatus_t)
static const char *hcb_statusString(void *fn, int st) {
	return ((const char *(*)(hcb_status))fn)(st);
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// cublasLib is a loaded libcublas with its entry points.
type cublasLib struct {
	lib, lt *dl.Library
	file    string
	ver     string

	fnCreate, fnDestroy, fnSetStream, fnSetMathMode, fnGemm unsafe.Pointer
	fnSetSMCount, fnStatusString                            unsafe.Pointer // optional
}

var _ blasLib = (*cublasLib)(nil)

// openBLASFrom opens the first candidate that loads and has every entry
// point Gemm needs. The driver must be this package's dlopen'ed one: its
// context calls are what the trampolines use.
func openBLASFrom(drv api, candidates []blasCandidate) (blasLib, error) {
	if len(candidates) == 0 {
		return nil, fmt.Errorf("cuda: no cuBLAS: no libcublas.so.13 or .12 on the loader path, under $CUDA_HOME/lib64, "+
			"/usr/local/cuda/lib64 or in a Python wheel (set %s): %w", EnvCUBLAS, device.ErrNotSupported)
	}
	var reasons []string
	for _, c := range candidates {
		lib, err := loadCublas(c)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		cd, ok := drv.(*cuDriver)
		if !ok {
			return nil, fmt.Errorf("cuda: cuBLAS at %s needs the CUDA driver binding (%T here): %w", lib.file, drv, device.ErrNotSupported)
		}
		C.hcb_setContextCalls(cd.fn.ctxGetCurrent, cd.fn.ctxSetCurrent)
		return lib, nil
	}
	return nil, fmt.Errorf("cuda: no usable cuBLAS: %s: %w", strings.Join(reasons, "; "), device.ErrNotSupported)
}

func loadCublas(c blasCandidate) (*cublasLib, error) {
	l := &cublasLib{file: c.lib}
	var err error
	if c.lt != "" {
		// Best effort: libcublas names it as a dependency, and a copy
		// already loaded satisfies that whatever the loader path says.
		l.lt, _ = dl.Open(c.lt)
	}
	if l.lib, err = dl.Open(c.lib); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		dst  *unsafe.Pointer
		name string
	}{
		{&l.fnCreate, "cublasCreate_v2"},
		{&l.fnDestroy, "cublasDestroy_v2"},
		{&l.fnSetStream, "cublasSetStream_v2"},
		{&l.fnSetMathMode, "cublasSetMathMode"},
		{&l.fnGemm, "cublasGemmEx"},
	} {
		if *s.dst, err = l.lib.Sym(s.name); err != nil {
			return nil, fmt.Errorf("%s lacks %s", c.lib, s.name)
		}
	}
	l.fnSetSMCount, _ = l.lib.Sym("cublasSetSmCountTarget")
	l.fnStatusString, _ = l.lib.Sym("cublasGetStatusString")
	if prop, err := l.lib.Sym("cublasGetProperty"); err == nil {
		var v [3]C.int
		ok := true
		for i, t := range []int{libMajorVersion, libMinorVersion, libPatchLevel} {
			ok = ok && C.hcb_getProperty(prop, C.int(t), &v[i]) == 0
		}
		if ok {
			l.ver = fmt.Sprintf("%d.%d.%d", int(v[0]), int(v[1]), int(v[2]))
		}
	}
	if f := C.hcb_libraryOf(l.fnGemm); f != nil {
		l.file = C.GoString(f)
	}
	return l, nil
}

func (l *cublasLib) path() string           { return l.file }
func (l *cublasLib) version() string        { return l.ver }
func (l *cublasLib) hasSMCountTarget() bool { return l.fnSetSMCount != nil }

func (l *cublasLib) statusString(st blasStatus) string {
	if l.fnStatusString == nil {
		return ""
	}
	if s := C.hcb_statusString(l.fnStatusString, C.int(st)); s != nil {
		return C.GoString(s)
	}
	return ""
}

func (l *cublasLib) create(ctx uintptr) (uintptr, blasStatus, result) {
	var h C.uintptr_t
	var cu C.int
	st := C.hcb_create(l.fnCreate, C.uintptr_t(ctx), &h, &cu)
	return uintptr(h), blasStatus(st), result(cu)
}

func (l *cublasLib) destroy(ctx, h uintptr) (blasStatus, result) {
	var cu C.int
	st := C.hcb_destroy(l.fnDestroy, C.uintptr_t(ctx), C.uintptr_t(h), &cu)
	return blasStatus(st), result(cu)
}

func (l *cublasLib) setStream(ctx, h, stream uintptr) (blasStatus, result) {
	var cu C.int
	st := C.hcb_setStream(l.fnSetStream, C.uintptr_t(ctx), C.uintptr_t(h), C.uintptr_t(stream), &cu)
	return blasStatus(st), result(cu)
}

func (l *cublasLib) setMathMode(ctx, h uintptr, mode int) (blasStatus, result) {
	var cu C.int
	st := C.hcb_setInt(l.fnSetMathMode, C.uintptr_t(ctx), C.uintptr_t(h), C.int(mode), &cu)
	return blasStatus(st), result(cu)
}

func (l *cublasLib) setSMCountTarget(ctx, h uintptr, n int) (blasStatus, result) {
	if l.fnSetSMCount == nil {
		return blasNotSupported, cudaSuccess
	}
	var cu C.int
	st := C.hcb_setInt(l.fnSetSMCount, C.uintptr_t(ctx), C.uintptr_t(h), C.int(n), &cu)
	return blasStatus(st), result(cu)
}

func (l *cublasLib) gemmEx(ctx, h uintptr, g gemmEx) (blasStatus, result) {
	var cu C.int
	st := C.hcb_gemmEx(l.fnGemm, C.uintptr_t(ctx), C.uintptr_t(h), C.int(g.transA), C.int(g.transB),
		C.int(g.m), C.int(g.n), C.int(g.k),
		C.uint64_t(g.a), C.int(g.aType), C.int(g.lda),
		C.uint64_t(g.b), C.int(g.bType), C.int(g.ldb),
		C.uint64_t(g.c), C.int(g.cType), C.int(g.ldc),
		C.int(g.compute), C.int(g.algo), &cu)
	return blasStatus(st), result(cu)
}
