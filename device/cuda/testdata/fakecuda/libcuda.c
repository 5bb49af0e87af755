// A fake libcuda.so.1 for testing hiercoll's device/cuda binding on machines
// without a GPU: host memory stands in for device memory (so addresses are
// "unified"), streams are queues run eagerly on the calling thread, a
// wait-value holds its stream back until the word satisfies it, and kernels
// are two known test kernels executed on the host.
//
// It checks what a real driver would reject or what would silently break on
// one: every context-bound call needs the primary context current on the
// calling thread, entry points requested from cuGetProcAddress_v2 with a
// too-old ABI version (or bound by their legacy unsuffixed names) abort the
// process, and kernel parameters are read by their declared sizes.
//
// FAKE_CUDA_NO_GPA=1 makes cuGetProcAddress_v2 find nothing, so the binding
// falls back to dlsym of the versioned names.

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_IMAGE = 200, INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500,
	NOT_READY = 600, NOT_SUPPORTED = 801,
};

#define NDEV 2
#define MAXALLOC 4096

typedef struct ctx { int dev; int refs; } ctx_t;

typedef struct event {
	int live;
	unsigned long recorded, completed;
	struct timespec at;
} event_t;

enum { OP_COPY, OP_MEMSET, OP_WAIT, OP_WRITE, OP_RECORD, OP_WAIT_EVENT, OP_LAUNCH };

struct function;

typedef struct op {
	int kind;
	CUdeviceptr dst, src;
	size_t n;
	uint32_t v;
	unsigned flags;
	event_t *ev;
	unsigned long gen;
	struct function *fn;
	unsigned grid, block;
	unsigned char args[8 * 8];
	struct op *next;
} op_t;

typedef struct stream {
	int live;
	ctx_t *ctx;
	op_t *head, *tail;
} stream_t;

typedef struct module {
	char *text; // the fake CUBIN's text after its ELF magic
} module_t;

typedef struct function {
	module_t *mod;
	char name[64];
	int nparams;
	int sizes[8];
	int max_shared; // dynamic shared memory allowed (cuFuncSetAttribute)
} function_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static ctx_t primary[NDEV];
static __thread ctx_t *current;
static stream_t legacy = {1, &primary[0], NULL, NULL};

static struct { CUdeviceptr base; size_t size; int ipc; ctx_t *ctx; } allocs[MAXALLOC];

static void legacy_abi(const char *name) {
	fprintf(stderr, "fake libcuda: %s: a legacy (unversioned) ABI entry point was called\n", name);
	abort();
}

#define POISON(name) EXPORT CUresult name(void) { legacy_abi(#name); return 999; }
POISON(cuDeviceTotalMem)
POISON(cuDevicePrimaryCtxRelease)
POISON(cuMemAlloc)
POISON(cuMemFree)
POISON(cuMemGetAddressRange)
POISON(cuMemcpyHtoDAsync)
POISON(cuMemcpyDtoHAsync)
POISON(cuMemcpyHtoD)
POISON(cuMemcpyDtoH)
POISON(cuIpcOpenMemHandle)
POISON(cuStreamDestroy)
POISON(cuEventDestroy)
POISON(cuStreamWaitValue32)
POISON(cuStreamWriteValue32)

static CUresult need_ctx(void) {
	if (!initialized) return NOT_INITIALIZED;
	if (current == NULL || current->refs <= 0) return INVALID_CONTEXT;
	return OK;
}

static double now_ms(const struct timespec *t) { return t->tv_sec * 1e3 + t->tv_nsec / 1e6; }

// Process-wide calls.

EXPORT CUresult cuInit(unsigned int flags) {
	if (flags != 0) return INVALID_VALUE;
	for (int i = 0; i < NDEV; i++) primary[i].dev = i;
	initialized = 1;
	return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
	*v = 13000;
	return OK;
}

static const char *names[][2] = {
	{"CUDA_SUCCESS", "no error"},
	{"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
};

static const char *describe(CUresult r, int which) {
	if (r >= 0 && r < 4) return names[r][which];
	switch (r) {
	case INVALID_DEVICE: return which ? "invalid device ordinal" : "CUDA_ERROR_INVALID_DEVICE";
	case INVALID_IMAGE: return which ? "device kernel image is invalid" : "CUDA_ERROR_INVALID_IMAGE";
	case INVALID_CONTEXT: return which ? "invalid device context" : "CUDA_ERROR_INVALID_CONTEXT";
	case INVALID_HANDLE: return which ? "invalid resource handle" : "CUDA_ERROR_INVALID_HANDLE";
	case NOT_FOUND: return which ? "named symbol not found" : "CUDA_ERROR_NOT_FOUND";
	case NOT_READY: return which ? "device not ready" : "CUDA_ERROR_NOT_READY";
	case NOT_SUPPORTED: return which ? "operation not supported" : "CUDA_ERROR_NOT_SUPPORTED";
	}
	return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
	*s = describe(r, 0);
	return *s ? OK : INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
	*s = describe(r, 1);
	return *s ? OK : INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return NOT_INITIALIZED;
	*n = NDEV;
	return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!initialized) return NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= NDEV) return INVALID_DEVICE;
	*d = ordinal;
	return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	switch (attr) {
	case 16: *v = 132; break;
	case 38: *v = 50 << 20; break;
	case 40: *v = 3; break;
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	case 92: *v = 0; break;
	case 132: *v = 0; break;
	case 41: case 78: case 102: case 103: case 115: case 116: case 122: case 125: case 128: *v = 1; break;
	default:
		if (attr <= 0 || attr > 140) return INVALID_VALUE;
		*v = 0;
	}
	return OK;
}

EXPORT CUresult cuDeviceGetName(char *buf, int len, CUdevice d) {
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	snprintf(buf, (size_t)len, "Fake GPU %d", d);
	return OK;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d) {
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	snprintf(buf, (size_t)len, "0000:%02x:00.0", 0x19 + d);
	return OK;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	*bytes = (size_t)80 << 30;
	return OK;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
	if (d < 0 || d >= NDEV || peer < 0 || peer >= NDEV) return INVALID_DEVICE;
	*can = d != peer;
	return OK;
}

EXPORT CUresult cuDeviceGetP2PAttribute(int *v, int attr, CUdevice src, CUdevice dst) {
	if (src == dst || src < 0 || src >= NDEV || dst < 0 || dst >= NDEV) return INVALID_DEVICE;
	switch (attr) {
	case 1: *v = 0; return OK;
	case 2: case 3: *v = 1; return OK;
	}
	return INVALID_VALUE;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	primary[d].refs++;
	pthread_mutex_unlock(&mu);
	*ctx = &primary[d];
	return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	CUresult r = primary[d].refs > 0 ? OK : INVALID_CONTEXT;
	if (r == OK) primary[d].refs--;
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuCtxGetCurrent(void **ctx) {
	*ctx = current;
	return OK;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx) {
	current = (ctx_t *)ctx;
	return OK;
}

// Context-bound calls.

EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
	CUresult r = need_ctx();
	if (r) return r;
	*least = 0;
	*greatest = -5;
	return OK;
}

static int find_alloc(CUdeviceptr p) {
	for (int i = 0; i < MAXALLOC; i++) {
		if (allocs[i].base && p >= allocs[i].base && p < allocs[i].base + allocs[i].size) return i;
	}
	return -1;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
	CUresult r = need_ctx();
	if (r) return r;
	if (size == 0) return INVALID_VALUE;
	void *m = aligned_alloc(256, (size + 255) & ~(size_t)255);
	if (!m) return OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXALLOC; i++) {
		if (!allocs[i].base) {
			allocs[i].base = (CUdeviceptr)(uintptr_t)m;
			allocs[i].size = size;
			allocs[i].ipc = 0;
			allocs[i].ctx = current;
			pthread_mutex_unlock(&mu);
			*p = (CUdeviceptr)(uintptr_t)m;
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	free(m);
	return OUT_OF_MEMORY;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
	CUresult r = need_ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	int i = find_alloc(p);
	if (i < 0 || allocs[i].base != p || allocs[i].ipc) {
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	if (allocs[i].ctx != current) { // a real driver would free in the wrong context or fail
		pthread_mutex_unlock(&mu);
		return INVALID_CONTEXT;
	}
	allocs[i].base = 0;
	pthread_mutex_unlock(&mu);
	free((void *)(uintptr_t)p);
	return OK;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
	CUresult r = need_ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	int i = find_alloc(p);
	if (i >= 0) {
		*base = allocs[i].base;
		*size = allocs[i].size;
	}
	pthread_mutex_unlock(&mu);
	return i >= 0 ? OK : NOT_FOUND;
}

// Streams: each op runs as soon as everything before it on its stream has
// and, for waits, the condition holds. pump runs under mu.

static int runnable(op_t *o) {
	if (o->kind == OP_WAIT) {
		uint32_t w = __atomic_load_n((uint32_t *)(uintptr_t)o->dst, __ATOMIC_SEQ_CST);
		if (o->flags == 1) return w == o->v;
		return (int32_t)(w - o->v) >= 0;
	}
	if (o->kind == OP_WAIT_EVENT) return o->ev->completed >= o->gen;
	return 1;
}

static void run_kernel(op_t *o) {
	function_t *f = o->fn;
	unsigned long long out;
	memcpy(&out, o->args, 8);
	if (strcmp(f->name, "hc_test_args") == 0) {
		int32_t a; uint32_t b, e; int64_t c; uint64_t d;
		memcpy(&a, o->args + 8, 4);
		memcpy(&b, o->args + 16, 4);
		memcpy(&c, o->args + 24, 8);
		memcpy(&d, o->args + 32, 8);
		memcpy(&e, o->args + 40, 4);
		uint64_t *w = (uint64_t *)(uintptr_t)out;
		w[0] = (uint64_t)(int64_t)a;
		w[1] = b;
		w[2] = (uint64_t)c;
		w[3] = d;
		w[4] = e;
		w[5] = o->grid;
		w[6] = o->block;
	} else if (strcmp(f->name, "hc_test_fill") == 0) {
		uint32_t n, base;
		memcpy(&n, o->args + 8, 4);
		memcpy(&base, o->args + 16, 4);
		uint32_t *w = (uint32_t *)(uintptr_t)out;
		for (uint64_t i = 0; i < n && i < (uint64_t)o->grid * o->block; i++) w[i] = base + (uint32_t)i;
	}
}

static void execute(op_t *o) {
	switch (o->kind) {
	case OP_COPY: memmove((void *)(uintptr_t)o->dst, (void *)(uintptr_t)o->src, o->n); break;
	case OP_MEMSET: {
		uint32_t *w = (uint32_t *)(uintptr_t)o->dst;
		for (size_t i = 0; i < o->n; i++) __atomic_store_n(&w[i], o->v, __ATOMIC_SEQ_CST);
		break;
	}
	case OP_WRITE: __atomic_store_n((uint32_t *)(uintptr_t)o->dst, o->v, __ATOMIC_SEQ_CST); break;
	case OP_RECORD:
		clock_gettime(CLOCK_MONOTONIC, &o->ev->at);
		o->ev->completed = o->gen;
		break;
	case OP_LAUNCH: run_kernel(o); break;
	}
}

#define MAXSTREAMS 256
static stream_t *streams[MAXSTREAMS];

static void pump_one(stream_t *s, int *progress) {
	while (s->head && runnable(s->head)) {
		op_t *o = s->head;
		execute(o);
		s->head = o->next;
		if (!s->head) s->tail = NULL;
		free(o);
		*progress = 1;
	}
}

static void pump(void) {
	int progress = 1;
	while (progress) {
		progress = 0;
		pump_one(&legacy, &progress);
		for (int i = 0; i < MAXSTREAMS; i++) {
			if (streams[i] && streams[i]->live) pump_one(streams[i], &progress);
		}
	}
}

static stream_t *stream_of(void *h) { return h ? (stream_t *)h : &legacy; }

static CUresult enqueue(void *h, op_t *o) {
	CUresult r = need_ctx();
	if (r) {
		free(o);
		return r;
	}
	stream_t *s = stream_of(h);
	if (s != &legacy && s->ctx != current) { // work must be queued in the stream's own context
		free(o);
		return INVALID_CONTEXT;
	}
	pthread_mutex_lock(&mu);
	if (!s->live) {
		pthread_mutex_unlock(&mu);
		free(o);
		return INVALID_HANDLE;
	}
	o->next = NULL;
	if (s->tail) s->tail->next = o; else s->head = o;
	s->tail = o;
	pump();
	pthread_mutex_unlock(&mu);
	return OK;
}

static op_t *new_op(int kind) {
	op_t *o = calloc(1, sizeof *o);
	if (o) o->kind = kind;
	return o;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *h) {
	op_t *o = new_op(OP_COPY);
	o->dst = dst;
	o->src = (CUdeviceptr)(uintptr_t)src; // "staged": the test keeps src alive until the stream drains
	o->n = n;
	return enqueue(h, o);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *h) {
	op_t *o = new_op(OP_COPY);
	o->dst = (CUdeviceptr)(uintptr_t)dst;
	o->src = src;
	o->n = n;
	return enqueue(h, o);
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *h) {
	op_t *o = new_op(OP_COPY);
	o->dst = dst;
	o->src = src;
	o->n = n;
	return enqueue(h, o);
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, void *h) {
	if (dst % 4) return INVALID_VALUE;
	op_t *o = new_op(OP_MEMSET);
	o->dst = dst;
	o->v = v;
	o->n = n;
	return enqueue(h, o);
}

EXPORT CUresult cuStreamWaitValue32_v2(void *h, CUdeviceptr addr, uint32_t v, unsigned int flags) {
	if (flags > 1) return INVALID_VALUE;
	op_t *o = new_op(OP_WAIT);
	o->dst = addr;
	o->v = v;
	o->flags = flags;
	return enqueue(h, o);
}

EXPORT CUresult cuStreamWriteValue32_v2(void *h, CUdeviceptr addr, uint32_t v, unsigned int flags) {
	if (flags != 0) return INVALID_VALUE;
	op_t *o = new_op(OP_WRITE);
	o->dst = addr;
	o->v = v;
	return enqueue(h, o);
}

EXPORT CUresult cuStreamCreateWithPriority(void **h, unsigned int flags, int prio) {
	CUresult r = need_ctx();
	if (r) return r;
	if (flags != 1 || prio > 0 || prio < -5) return INVALID_VALUE;
	stream_t *s = calloc(1, sizeof *s);
	s->live = 1;
	s->ctx = current;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXSTREAMS; i++) {
		if (!streams[i]) {
			streams[i] = s;
			pthread_mutex_unlock(&mu);
			*h = s;
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	free(s);
	return OUT_OF_MEMORY;
}

EXPORT CUresult cuStreamDestroy_v2(void *h) {
	CUresult r = need_ctx();
	if (r) return r;
	if (!h) return INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXSTREAMS; i++) {
		if (streams[i] == h) {
			stream_t *s = streams[i];
			streams[i] = NULL;
			while (s->head) {
				op_t *o = s->head;
				s->head = o->next;
				free(o);
			}
			free(s);
			pthread_mutex_unlock(&mu);
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_HANDLE;
}

EXPORT CUresult cuStreamQuery(void *h) {
	CUresult r = need_ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	pump();
	r = stream_of(h)->head ? NOT_READY : OK;
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuEventCreate(void **e, unsigned int flags) {
	CUresult r = need_ctx();
	if (r) return r;
	if (flags != 0) return INVALID_VALUE;
	event_t *ev = calloc(1, sizeof *ev);
	ev->live = 1;
	*e = ev;
	return OK;
}

EXPORT CUresult cuEventRecord(void *e, void *h) {
	event_t *ev = e;
	if (!ev || !ev->live) return INVALID_HANDLE;
	op_t *o = new_op(OP_RECORD);
	o->ev = ev;
	pthread_mutex_lock(&mu);
	o->gen = ++ev->recorded;
	pthread_mutex_unlock(&mu);
	return enqueue(h, o);
}

EXPORT CUresult cuStreamWaitEvent(void *h, void *e, unsigned int flags) {
	event_t *ev = e;
	if (!ev || !ev->live || flags != 0) return INVALID_HANDLE;
	op_t *o = new_op(OP_WAIT_EVENT);
	o->ev = ev;
	pthread_mutex_lock(&mu);
	o->gen = ev->recorded;
	pthread_mutex_unlock(&mu);
	return enqueue(h, o);
}

EXPORT CUresult cuEventQuery(void *e) {
	CUresult r = need_ctx();
	if (r) return r;
	event_t *ev = e;
	pthread_mutex_lock(&mu);
	pump();
	r = ev->completed >= ev->recorded ? OK : NOT_READY;
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuEventDestroy_v2(void *e) {
	CUresult r = need_ctx();
	if (r) return r;
	event_t *ev = e;
	if (!ev || !ev->live) return INVALID_HANDLE;
	ev->live = 0; // leaked on purpose: queued ops may still point at it
	return OK;
}

static CUresult elapsed(float *ms, void *a, void *b) {
	CUresult r = need_ctx();
	if (r) return r;
	event_t *s = a, *e = b;
	pthread_mutex_lock(&mu);
	pump();
	if (!s->recorded || !e->recorded) r = INVALID_HANDLE;
	else if (s->completed < s->recorded || e->completed < e->recorded) r = NOT_READY;
	else *ms = (float)(now_ms(&e->at) - now_ms(&s->at));
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { return elapsed(ms, a, b); }
EXPORT CUresult cuEventElapsedTime(float *ms, void *a, void *b) { return elapsed(ms, a, b); }

// IPC: a handle names the allocation and the exporting process; like CUDA,
// the exporting process cannot open its own handle.

struct fake_handle { char magic[8]; int32_t pid; int32_t pad; uint64_t base; uint64_t size; };

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
	CUresult r = need_ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	int i = find_alloc(p);
	pthread_mutex_unlock(&mu);
	if (i < 0) return INVALID_VALUE;
	struct fake_handle fh = {"FAKEIPC", (int32_t)getpid(), 0, allocs[i].base, allocs[i].size};
	memset(h, 0, sizeof *h);
	memcpy(h->reserved, &fh, sizeof fh);
	return OK;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) {
	CUresult r = need_ctx();
	if (r) return r;
	struct fake_handle fh;
	memcpy(&fh, h.reserved, sizeof fh);
	if (memcmp(fh.magic, "FAKEIPC", 8) != 0 || flags != 1) return INVALID_VALUE;
	if (fh.pid == (int32_t)getpid()) return INVALID_CONTEXT;
	return NOT_SUPPORTED;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
	CUresult r = need_ctx();
	if (r) return r;
	(void)p;
	return INVALID_VALUE;
}

// Modules: a fake CUBIN is "\x7fELF" followed by NUL-terminated text that
// contains the kernels' source.

static int nmodules;

EXPORT CUresult cuModuleLoadData(void **m, const void *image) {
	CUresult r = need_ctx();
	if (r) return r;
	if (!image || memcmp(image, "\x7f" "ELF", 4) != 0) return INVALID_IMAGE;
	module_t *mod = calloc(1, sizeof *mod);
	mod->text = strdup((const char *)image + 4);
	pthread_mutex_lock(&mu);
	nmodules++;
	pthread_mutex_unlock(&mu);
	*m = mod;
	return OK;
}

EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	CUresult r = need_ctx();
	if (r) return r;
	module_t *mod = m;
	char decl[96];
	snprintf(decl, sizeof decl, "void %s(", name);
	if (!strstr(mod->text, decl) || strlen(name) >= 64) return NOT_FOUND;
	function_t *fn = calloc(1, sizeof *fn);
	fn->mod = mod;
	fn->max_shared = 48 << 10;
	strcpy(fn->name, name);
	if (strcmp(name, "hc_test_args") == 0) {
		int sizes[] = {8, 4, 4, 8, 8, 4};
		fn->nparams = 6;
		memcpy(fn->sizes, sizes, sizeof sizes);
	} else if (strcmp(name, "hc_test_fill") == 0) {
		int sizes[] = {8, 4, 4};
		fn->nparams = 3;
		memcpy(fn->sizes, sizes, sizeof sizes);
	} else {
		fn->nparams = -1;
	}
	*f = fn;
	return OK;
}

EXPORT CUresult cuModuleUnload(void *m) {
	CUresult r = need_ctx();
	if (r) return r;
	module_t *mod = m;
	pthread_mutex_lock(&mu);
	nmodules--;
	pthread_mutex_unlock(&mu);
	free(mod->text);
	free(mod); // functions leak: fine for a test
	return OK;
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shared, void *h, void **params, void **extra) {
	function_t *fn = f;
	if (!fn || fn->nparams < 0) return NOT_SUPPORTED;
	if (gy != 1 || gz != 1 || by != 1 || bz != 1 || extra != NULL) return INVALID_VALUE;
	if (shared > (unsigned)fn->max_shared) return INVALID_VALUE;
	if (gx == 0 || bx == 0 || bx > 1024) return INVALID_VALUE;
	op_t *o = new_op(OP_LAUNCH);
	o->fn = fn;
	o->grid = gx;
	o->block = bx;
	// Parameters are captured now, by their declared sizes, each into its own
	// 8-byte slot here, as the driver captures them at launch.
	for (int i = 0; i < fn->nparams; i++) memcpy(o->args + 8 * i, params[i], (size_t)fn->sizes[i]);
	return enqueue(h, o);
}

// Kernel attributes: the dynamic shared memory limit (48 KiB until raised,
// at most the 227 KiB of a Hopper SM), and a register count to report.
EXPORT CUresult cuFuncSetAttribute(void *f, int attr, int value) {
	CUresult r = need_ctx();
	if (r) return r;
	function_t *fn = f;
	if (!fn) return INVALID_VALUE;
	if (attr != 8 || value < 0 || value > 232448) return INVALID_VALUE;
	fn->max_shared = value;
	return OK;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attr, void *f) {
	CUresult r = need_ctx();
	if (r) return r;
	function_t *fn = f;
	if (!fn || !value) return INVALID_VALUE;
	switch (attr) {
	case 8: *value = fn->max_shared; return OK;
	case 4: *value = 32; return OK; // registers
	case 3: *value = 0; return OK;  // local memory
	}
	return INVALID_VALUE;
}

// cuTensorMapEncodeTiled: checks what the driver documents (rank, 16-byte
// aligned address and strides, box dimensions, enum ranges) and writes the
// arguments into the map so a test can read them back.
EXPORT CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
		const unsigned long long *strides, const unsigned *box, const unsigned *estrides, int interleave, int swizzle,
		int l2, int oob) {
	if (!map || ((uintptr_t)map) % 64 != 0 || rank < 1 || rank > 5 || dtype < 0 || dtype > 12) return INVALID_VALUE;
	if (((uintptr_t)addr) % 16 != 0 || interleave != 0 || swizzle < 0 || swizzle > 3 || l2 < 0 || l2 > 3 || oob < 0 || oob > 1)
		return INVALID_VALUE;
	for (unsigned i = 0; i < rank; i++) {
		if (dims[i] == 0 || box[i] == 0 || box[i] > 256 || estrides[i] == 0) return INVALID_VALUE;
		if (i + 1 < rank && strides[i] % 16 != 0) return INVALID_VALUE;
	}
	unsigned long long *m = map;
	memset(map, 0, 128);
	m[0] = (unsigned long long)(uintptr_t)addr;
	m[1] = dims[0];
	m[2] = rank > 1 ? dims[1] : 0;
	m[3] = rank > 1 ? strides[0] : 0;
	m[4] = box[0] | ((unsigned long long)(rank > 1 ? box[1] : 0) << 32);
	m[5] = (unsigned long long)dtype | ((unsigned long long)swizzle << 8) | ((unsigned long long)l2 << 16);
	return OK;
}

// cuGetProcAddress_v2: the newest variant whose ABI version is at most the
// one asked for. An older variant than this binding expects is a poison
// function.

typedef struct { const char *name; int version; void *fn; } sym_t;

static CUresult poisoned_old_abi(void) {
	legacy_abi("(an old ABI version from cuGetProcAddress_v2)");
	return 999;
}

#define SYM(name, version, fn) {name, version, (void *)(fn)}
static const sym_t table[] = {
	SYM("cuInit", 2000, cuInit),
	SYM("cuDriverGetVersion", 2020, cuDriverGetVersion),
	SYM("cuGetErrorName", 6000, cuGetErrorName),
	SYM("cuGetErrorString", 6000, cuGetErrorString),
	SYM("cuDeviceGetCount", 2000, cuDeviceGetCount),
	SYM("cuDeviceGet", 2000, cuDeviceGet),
	SYM("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
	SYM("cuDeviceGetName", 2000, cuDeviceGetName),
	SYM("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId),
	SYM("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
	SYM("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
	SYM("cuDeviceGetP2PAttribute", 8000, cuDeviceGetP2PAttribute),
	SYM("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	SYM("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
	SYM("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	SYM("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	SYM("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange),
	SYM("cuMemAlloc", 3020, cuMemAlloc_v2),
	SYM("cuMemFree", 3020, cuMemFree_v2),
	SYM("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
	SYM("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
	SYM("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
	SYM("cuMemcpyAsync", 4000, cuMemcpyAsync),
	SYM("cuMemsetD32Async", 3020, cuMemsetD32Async),
	SYM("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle),
	SYM("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
	SYM("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
	SYM("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
	SYM("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	SYM("cuStreamQuery", 2000, cuStreamQuery),
	SYM("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
	SYM("cuStreamWaitValue32", 11070, cuStreamWaitValue32_v2),
	SYM("cuStreamWriteValue32", 11070, cuStreamWriteValue32_v2),
	SYM("cuEventCreate", 2000, cuEventCreate),
	SYM("cuEventRecord", 2000, cuEventRecord),
	SYM("cuEventQuery", 2000, cuEventQuery),
	SYM("cuEventDestroy", 4000, cuEventDestroy_v2),
	SYM("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
	SYM("cuModuleLoadData", 2000, cuModuleLoadData),
	SYM("cuModuleGetFunction", 2000, cuModuleGetFunction),
	SYM("cuModuleUnload", 2000, cuModuleUnload),
	SYM("cuLaunchKernel", 4000, cuLaunchKernel),
	SYM("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
	SYM("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
	SYM("cuTensorMapEncodeTiled", 12000, cuTensorMapEncodeTiled),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
	*pfn = NULL;
	if (flags != 0) return INVALID_VALUE;
	if (version > 13000) return INVALID_VALUE;
	const char *off = getenv("FAKE_CUDA_NO_GPA");
	for (size_t i = 0; !(off && *off) && i < sizeof table / sizeof table[0]; i++) {
		if (strcmp(table[i].name, symbol) != 0) continue;
		if (version >= table[i].version) {
			*pfn = table[i].fn;
		} else if (strcmp(symbol, "cuEventElapsedTime") == 0) {
			*pfn = (void *)cuEventElapsedTime;
		} else {
			*pfn = (void *)poisoned_old_abi;
		}
		if (status) *status = 0;
		return OK;
	}
	if (status) *status = 1; // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
	return OK;
}

// For the test harness: the number of modules loaded and not unloaded.
EXPORT int fake_cuda_modules(void) { return nmodules; }
