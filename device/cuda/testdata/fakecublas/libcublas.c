// A fake libcublas.so for testing hiercoll's cuBLAS binding on machines
// without a GPU, beside testdata/fakecuda/libcuda.c (whose device memory is
// host memory). It implements cublasGemmEx's column-major contract as the
// cuBLAS documentation states it, independently of the Go code that calls
// it, so that a wrong operand order, leading dimension or type in the
// binding shows up as a wrong product:
//
//   C[i + j*ldc] = alpha * sum_l op(A)[i, l] * op(B)[l, j] + beta * C[i + j*ldc]
//
// for OP_N only (op(X) = X, X[i + l*ldx]), accumulated in float, with the
// CUDA_R_16BF / CUDA_R_16F / CUDA_R_32F storage types and
// CUBLAS_COMPUTE_32F.
//
// It checks what the real library would reject or what would break on a
// real GPU: every call needs a current context, the one current when the
// handle was created (cuBLAS handles are bound to it); sizes and leading
// dimensions are validated as documented; and since it computes eagerly on
// the calling thread, it refuses (EXECUTION_FAILED) to run on a stream that
// still has pending work, instead of silently reordering it.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
	SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7,
	EXECUTION_FAILED = 13, NOT_SUPPORTED = 15,
};
enum { R_32F = 0, R_16F = 2, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1, OP_N = 0 };

typedef struct handle {
	void *ctx;
	void *stream;
	int math;
	int sms;
} handle_t;

static int (*ctx_get_current)(void **);
static int (*stream_query)(void *);

// The fake driver is loaded first (RTLD_GLOBAL), so its symbols resolve.
static int bind_driver(void) {
	if (!ctx_get_current) ctx_get_current = (int (*)(void **))dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
	if (!stream_query) stream_query = (int (*)(void *))dlsym(RTLD_DEFAULT, "cuStreamQuery");
	return ctx_get_current && stream_query;
}

static void *current(void) {
	void *c = NULL;
	if (!bind_driver() || ctx_get_current(&c) != 0) return NULL;
	return c;
}

static int in_context(handle_t *h) {
	if (h == NULL) return NOT_INITIALIZED;
	void *c = current();
	if (c == NULL || c != h->ctx) {
		fprintf(stderr, "fake cuBLAS: called with context %p current, the handle belongs to %p\n", c, h->ctx);
		return NOT_INITIALIZED;
	}
	return SUCCESS;
}

EXPORT int cublasCreate_v2(handle_t **out) {
	void *c = current();
	if (c == NULL) return NOT_INITIALIZED; // the real one would create a context of its own
	handle_t *h = calloc(1, sizeof *h);
	if (!h) return ALLOC_FAILED;
	h->ctx = c;
	*out = h;
	return SUCCESS;
}

EXPORT int cublasDestroy_v2(handle_t *h) {
	int r = in_context(h);
	if (r) return r;
	free(h);
	return SUCCESS;
}

EXPORT int cublasSetStream_v2(handle_t *h, void *stream) {
	int r = in_context(h);
	if (r) return r;
	h->stream = stream;
	return SUCCESS;
}

EXPORT int cublasSetMathMode(handle_t *h, int mode) {
	int r = in_context(h);
	if (r) return r;
	if ((mode & ~16) > 4) return INVALID_VALUE;
	h->math = mode;
	return SUCCESS;
}

EXPORT int cublasSetSmCountTarget(handle_t *h, int n) {
	int r = in_context(h);
	if (r) return r;
	if (n < 0 || n > 132) return INVALID_VALUE; // the fake GPU has 132 SMs
	h->sms = n;
	return SUCCESS;
}

EXPORT int cublasGetProperty(int type, int *value) {
	static const int version[3] = {13, 0, 7};
	if (type < 0 || type > 2) return INVALID_VALUE;
	*value = version[type];
	return SUCCESS;
}

EXPORT const char *cublasGetStatusString(int st) {
	switch (st) {
	case SUCCESS: return "the operation completed successfully";
	case NOT_INITIALIZED: return "the library was not initialized";
	case INVALID_VALUE: return "an invalid numeric value was used as an argument";
	case EXECUTION_FAILED: return "the GPU program failed to execute";
	case NOT_SUPPORTED: return "the functionality requested is not supported";
	}
	return "unknown error";
}

static float bf16_to_float(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)(u >> 16) | 0x40;
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static float half_to_float(uint16_t h) {
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;
	if (e == 0) v = ldexpf((float)m, -24);
	else if (e == 31) v = m ? NAN : INFINITY;
	else v = ldexpf((float)(m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

// Round to nearest even via double (exact for these magnitudes) and rint.
static uint16_t float_to_half(float f) {
	uint16_t sign = signbit(f) ? 0x8000 : 0;
	double a = fabs((double)f);
	if (isnan(f)) return 0x7e00;
	if (a >= 65520.0) return sign | 0x7c00; // rounds to infinity
	if (a < ldexp(1.0, -14)) {              // subnormal: multiples of 2^-24
		return sign | (uint16_t)rint(ldexp(a, 24));
	}
	int e;
	frexp(a, &e); // a = f * 2^e, f in [0.5, 1)
	double q = rint(ldexp(a, 11 - e)); // 11 significant bits
	if (q >= 2048.0) {
		q /= 2;
		e++;
	}
	if (e - 1 + 15 >= 31) return sign | 0x7c00;
	return sign | (uint16_t)((e - 1 + 15) << 10) | ((uint16_t)q & 0x3ff);
}

static float load(int type, const void *p, long i) {
	switch (type) {
	case R_16BF: return bf16_to_float(((const uint16_t *)p)[i]);
	case R_16F: return half_to_float(((const uint16_t *)p)[i]);
	default: return ((const float *)p)[i];
	}
}

static void store(int type, void *p, long i, float v) {
	switch (type) {
	case R_16BF: ((uint16_t *)p)[i] = float_to_bf16(v); break;
	case R_16F: ((uint16_t *)p)[i] = float_to_half(v); break;
	default: ((float *)p)[i] = v;
	}
}

EXPORT int cublasGemmEx(handle_t *h, int transa, int transb, int m, int n, int k, const void *alpha,
                        const void *A, int atype, int lda, const void *B, int btype, int ldb, const void *beta,
                        void *C, int ctype, int ldc, int compute, int algo) {
	int r = in_context(h);
	if (r) return r;
	if (transa != OP_N || transb != OP_N) return NOT_SUPPORTED; // the fake knows no transposes
	if (m < 0 || n < 0 || k < 0) return INVALID_VALUE;
	if (lda < (m > 1 ? m : 1) || ldb < (k > 1 ? k : 1) || ldc < (m > 1 ? m : 1)) return INVALID_VALUE;
	if (atype != btype || atype != ctype) return NOT_SUPPORTED;
	if (atype != R_16BF && atype != R_16F && atype != R_32F) return NOT_SUPPORTED;
	if (compute != COMPUTE_32F || algo != GEMM_DEFAULT) return NOT_SUPPORTED;
	if (!alpha || !beta) return INVALID_VALUE;
	if (stream_query(h->stream) != 0) {
		fprintf(stderr, "fake cuBLAS: stream %p has pending work; this fake computes at call time\n", h->stream);
		return EXECUTION_FAILED;
	}
	float al = *(const float *)alpha, be = *(const float *)beta;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float acc = 0;
			for (int l = 0; l < k; l++) {
				acc += load(atype, A, i + (long)l * lda) * load(btype, B, l + (long)j * ldb);
			}
			float v = al * acc;
			if (be != 0) v += be * load(ctype, C, i + (long)j * ldc);
			store(ctype, C, i + (long)j * ldc, v);
		}
	}
	return SUCCESS;
}
