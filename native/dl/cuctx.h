// The CUDA driver calls the native loaders (native/nccl, native/nvshmem) make
// around a library's calls: retaining a device's primary context and making
// it current on the calling thread for the length of one C call. Included by
// their cgo preambles with -I${SRCDIR}/../dl; every function is static, so
// each package gets its own copy. Resolved with dlsym from libcuda.so.1; the names have no _v2
// variants except cuDevicePrimaryCtxRelease_v2.
#ifndef HIERCOLL_CUCTX_H
#define HIERCOLL_CUCTX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
	int (*init)(unsigned int flags);                /* cuInit */
	int (*deviceGet)(int *dev, int ordinal);        /* cuDeviceGet */
	int (*primaryCtxRetain)(void **ctx, int dev);   /* cuDevicePrimaryCtxRetain */
	int (*primaryCtxRelease)(int dev);              /* cuDevicePrimaryCtxRelease_v2 */
	int (*ctxGetCurrent)(void **ctx);               /* cuCtxGetCurrent */
	int (*ctxSetCurrent)(void *ctx);                /* cuCtxSetCurrent */
	int (*getErrorName)(int err, const char **s);   /* cuGetErrorName */
} hc_cuda;

/* What one C call reports back to Go. */
typedef struct {
	const char *cuCall; /* the driver call that failed (a literal), or NULL */
	int cu;             /* its CUresult */
	int res;            /* the library call's result */
	char cuName[64];    /* cuGetErrorName(cu) */
	char text[128];     /* the library's name for res */
	char detail[512];   /* the library's last-error message */
} hc_status;

static inline void hc_copy(char *dst, size_t n, const char *src) {
	if (src != NULL) snprintf(dst, n, "%s", src);
}

static inline int hc_cufail(const hc_cuda *cu, hc_status *st, const char *call, int r) {
	const char *name = NULL;
	st->cuCall = call;
	st->cu = r;
	if (cu->getErrorName != NULL && cu->getErrorName(r, &name) == 0) hc_copy(st->cuName, sizeof st->cuName, name);
	return r;
}

/* hc_retain initialises the driver and retains the primary context of device
 * ordinal. */
static inline int hc_retain(const hc_cuda *cu, int ordinal, int *dev, void **ctx, hc_status *st) {
	int r = cu->init(0);
	if (r != 0) return hc_cufail(cu, st, "cuInit", r);
	r = cu->deviceGet(dev, ordinal);
	if (r != 0) return hc_cufail(cu, st, "cuDeviceGet", r);
	r = cu->primaryCtxRetain(ctx, *dev);
	if (r != 0) return hc_cufail(cu, st, "cuDevicePrimaryCtxRetain", r);
	return 0;
}

/* hc_enter makes ctx current (when it is not NULL), saving the thread's
 * current context in *saved for hc_leave. */
static inline int hc_enter(const hc_cuda *cu, void *ctx, void **saved, hc_status *st) {
	*saved = NULL;
	if (ctx == NULL) return 0;
	int r = cu->ctxGetCurrent(saved);
	if (r != 0) return hc_cufail(cu, st, "cuCtxGetCurrent", r);
	if (*saved == ctx) return 0;
	r = cu->ctxSetCurrent(ctx);
	if (r != 0) return hc_cufail(cu, st, "cuCtxSetCurrent", r);
	return 0;
}

/* hc_leave restores the context hc_enter found. */
static inline void hc_leave(const hc_cuda *cu, void *ctx, void *saved) {
	if (ctx != NULL && saved != ctx) cu->ctxSetCurrent(saved);
}

#endif
