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
//
// Multicast: the devices report MULTICAST_SUPPORTED (132) as
// $FAKE_CUDA_MULTICAST (1, else 0). Virtual memory management and multicast
// objects are modelled (memfd-backed physical memory mapped into reserved
// address ranges; objects that check the driver's rules: every device added
// before any bind, sizes multiples of the granularity), and every
// cuMulticast* and cuMem* VMM call is appended, one line each, to the file
// $FAKE_CUDA_MULTICAST_LOG, so a test can tell which were made, in what
// order.

#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>
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
	ILLEGAL_STATE = 401, NOT_READY = 600, NOT_SUPPORTED = 801,
};

#define NDEV 2
#define MAXALLOC 4096

typedef struct ctx { int dev; int refs; } ctx_t;

typedef struct event {
	int live, untimed; // untimed: CU_EVENT_DISABLE_TIMING
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
	case ILLEGAL_STATE: return which ? "the operation is not permitted in this state" : "CUDA_ERROR_ILLEGAL_STATE";
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
	case 132: {
		const char *mc = getenv("FAKE_CUDA_MULTICAST");
		*v = mc && strcmp(mc, "1") == 0;
		break;
	}
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
	if (flags != 0 && flags != 2) return INVALID_VALUE; // DEFAULT or DISABLE_TIMING
	event_t *ev = calloc(1, sizeof *ev);
	ev->live = 1;
	ev->untimed = flags == 2;
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
	if (!s->recorded || !e->recorded || s->untimed || e->untimed) r = INVALID_HANDLE;
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
// arguments into the map so a test can read them back. Like the driver
// (580 seen failing so), it needs a current context.
EXPORT CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
		const unsigned long long *strides, const unsigned *box, const unsigned *estrides, int interleave, int swizzle,
		int l2, int oob) {
	CUresult r = need_ctx();
	if (r != OK) return r;
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

// Virtual memory management and multicast objects.

#define GRAN ((size_t)2 << 20)
#define MAXVMM 64
#define PHYS_TAG 0x5048000000000000ull // "PH"
#define MC_TAG 0x4d43000000000000ull   // "MC"

static struct { int live; size_t size; int fd; int dev; } phys[MAXVMM];
static struct {
	int live, refs;
	unsigned numDevices;
	size_t size;
	unsigned long long handleTypes;
	int added[NDEV], nadded, bound[NDEV];
} mcs[MAXVMM];
static struct { int live; CUdeviceptr base; size_t size; void *raw; size_t rawsize; } reserved[MAXVMM];
static struct { int live; CUdeviceptr p; size_t size; unsigned long long h; } mapped[MAXVMM];

typedef struct { int type; int id; } loc_t;
typedef struct {
	int type, requestedHandleTypes;
	loc_t location;
	void *win32HandleMetaData;
	unsigned char compressionType, gpuDirectRDMACapable;
	unsigned short usage;
	unsigned char reserved[4];
} allocprop_t;
typedef struct { loc_t location; int flags; } access_t;
typedef struct { unsigned numDevices; size_t size; unsigned long long handleTypes, flags; } mcprop_t;

static void vmm_log(const char *fmt, ...) {
	const char *path = getenv("FAKE_CUDA_MULTICAST_LOG");
	if (!path || !*path) return;
	FILE *f = fopen(path, "a");
	if (!f) return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int phys_of(unsigned long long h) {
	unsigned long long i = h & 0xffff;
	if ((h & ~0xffffull) != PHYS_TAG || i >= MAXVMM || !phys[i].live) return -1;
	return (int)i;
}

static int mc_of(unsigned long long h) {
	unsigned long long i = h & 0xffff;
	if ((h & ~0xffffull) != MC_TAG || i >= MAXVMM || !mcs[i].live) return -1;
	return (int)i;
}

static int allocprop_ok(const allocprop_t *p) {
	return p && p->type == 1 && p->location.type == 1 && p->location.id >= 0 && p->location.id < NDEV;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const allocprop_t *prop, int option) {
	CUresult r = need_ctx();
	vmm_log("cuMemGetAllocationGranularity option=%d", option);
	if (r) return r;
	if (!allocprop_ok(prop) || (option != 0 && option != 1)) return INVALID_VALUE;
	*g = GRAN;
	return OK;
}

EXPORT CUresult cuMemCreate(unsigned long long *h, size_t size, const allocprop_t *prop, unsigned long long flags) {
	CUresult r = need_ctx();
	vmm_log("cuMemCreate size=%zu dev=%d", size, prop ? prop->location.id : -1);
	if (r) return r;
	if (!allocprop_ok(prop) || flags != 0 || size == 0 || size % GRAN) return INVALID_VALUE;
	int fd = memfd_create("fake-cuda-phys", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) return OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXVMM; i++) {
		if (!phys[i].live) {
			phys[i].live = 1;
			phys[i].size = size;
			phys[i].fd = fd;
			phys[i].dev = prop->location.id;
			pthread_mutex_unlock(&mu);
			*h = PHYS_TAG | (unsigned long long)i;
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	close(fd);
	return OUT_OF_MEMORY;
}

EXPORT CUresult cuMemRelease(unsigned long long h) {
	CUresult r = need_ctx();
	vmm_log("cuMemRelease %s", (h & ~0xffffull) == MC_TAG ? "multicast" : "memory");
	if (r) return r;
	pthread_mutex_lock(&mu);
	int i = phys_of(h), m = mc_of(h);
	if (i >= 0) {
		close(phys[i].fd);
		phys[i].live = 0;
	} else if (m >= 0) {
		if (--mcs[m].refs == 0) mcs[m].live = 0;
	} else {
		r = INVALID_HANDLE;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	CUresult r = need_ctx();
	vmm_log("cuMemAddressReserve size=%zu align=%zu", size, align);
	if (r) return r;
	if (size == 0 || size % GRAN || addr != 0 || flags != 0 || (align && (align & (align - 1)))) return INVALID_VALUE;
	if (align < GRAN) align = GRAN;
	size_t rawsize = size + align;
	void *raw = mmap(NULL, rawsize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) return OUT_OF_MEMORY;
	CUdeviceptr base = ((CUdeviceptr)(uintptr_t)raw + align - 1) & ~(CUdeviceptr)(align - 1);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXVMM; i++) {
		if (!reserved[i].live) {
			reserved[i].live = 1;
			reserved[i].base = base;
			reserved[i].size = size;
			reserved[i].raw = raw;
			reserved[i].rawsize = rawsize;
			pthread_mutex_unlock(&mu);
			*p = base;
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	munmap(raw, rawsize);
	return OUT_OF_MEMORY;
}

static int reserved_at(CUdeviceptr p, size_t size) {
	for (int i = 0; i < MAXVMM; i++) {
		if (reserved[i].live && p >= reserved[i].base && p + size <= reserved[i].base + reserved[i].size) return i;
	}
	return -1;
}

static int mapped_at(CUdeviceptr p) {
	for (int i = 0; i < MAXVMM; i++) {
		if (mapped[i].live && mapped[i].p == p) return i;
	}
	return -1;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
	CUresult r = need_ctx();
	vmm_log("cuMemAddressFree size=%zu", size);
	if (r) return r;
	pthread_mutex_lock(&mu);
	int i = reserved_at(p, size);
	if (i < 0 || reserved[i].base != p || reserved[i].size != size) {
		r = INVALID_VALUE;
	} else {
		for (int j = 0; j < MAXVMM; j++) {
			if (mapped[j].live && mapped[j].p >= p && mapped[j].p < p + size) r = ILLEGAL_STATE; // still mapped
		}
		if (r == OK) {
			munmap(reserved[i].raw, reserved[i].rawsize);
			reserved[i].live = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, unsigned long long h, unsigned long long flags) {
	CUresult r = need_ctx();
	vmm_log("cuMemMap %s size=%zu", (h & ~0xffffull) == MC_TAG ? "multicast" : "memory", size);
	if (r) return r;
	if (offset != 0 || flags != 0 || size % GRAN) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int i = phys_of(h), m = mc_of(h);
	if (reserved_at(p, size) < 0 || mapped_at(p) >= 0) {
		r = INVALID_VALUE;
	} else if (i >= 0 && size <= phys[i].size) {
		if (mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, phys[i].fd, 0) == MAP_FAILED) r = OUT_OF_MEMORY;
	} else if (m >= 0 && size <= mcs[m].size) {
		// A multicast mapping: plain accesses to it are undefined; here it
		// is private zeros.
		if (mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) r = OUT_OF_MEMORY;
	} else {
		r = INVALID_HANDLE;
	}
	for (int j = 0; r == OK && j < MAXVMM; j++) {
		if (!mapped[j].live) {
			mapped[j].live = 1;
			mapped[j].p = p;
			mapped[j].size = size;
			mapped[j].h = h;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
	CUresult r = need_ctx();
	vmm_log("cuMemUnmap size=%zu", size);
	if (r) return r;
	pthread_mutex_lock(&mu);
	int j = mapped_at(p);
	if (j < 0 || mapped[j].size != size) {
		r = INVALID_VALUE;
	} else {
		mmap((void *)(uintptr_t)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		mapped[j].live = 0;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const access_t *desc, size_t count) {
	CUresult r = need_ctx();
	vmm_log("cuMemSetAccess size=%zu dev=%d flags=%d", size, desc ? desc->location.id : -1, desc ? desc->flags : -1);
	if (r) return r;
	if (count != 1 || !desc || desc->location.type != 1 || desc->location.id < 0 || desc->location.id >= NDEV || desc->flags != 3) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int j = mapped_at(p);
	if (j < 0 || mapped[j].size != size) r = INVALID_VALUE;
	pthread_mutex_unlock(&mu);
	return r;
}

// An exported multicast object is a memfd whose text names it.
EXPORT CUresult cuMemExportToShareableHandle(void *out, unsigned long long h, int type, unsigned long long flags) {
	CUresult r = need_ctx();
	vmm_log("cuMemExportToShareableHandle type=%d", type);
	if (r) return r;
	int m = mc_of(h);
	if (m < 0 || type != 1 || flags != 0 || !(mcs[m].handleTypes & 1)) return INVALID_VALUE;
	int fd = memfd_create("fake-cuda-multicast", MFD_CLOEXEC);
	char text[32];
	int n = snprintf(text, sizeof text, "FAKEMC %d", m);
	if (fd < 0 || write(fd, text, (size_t)n) != n) return OUT_OF_MEMORY;
	*(int *)out = fd;
	return OK;
}

EXPORT CUresult cuMemImportFromShareableHandle(unsigned long long *h, void *osHandle, int type) {
	CUresult r = need_ctx();
	vmm_log("cuMemImportFromShareableHandle type=%d", type);
	if (r) return r;
	if (type != 1) return INVALID_VALUE;
	char text[32] = {0};
	int m = -1;
	if (pread((int)(intptr_t)osHandle, text, sizeof text - 1, 0) <= 0 || sscanf(text, "FAKEMC %d", &m) != 1) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (m < 0 || m >= MAXVMM || !mcs[m].live) {
		r = INVALID_HANDLE;
	} else {
		mcs[m].refs++;
		*h = MC_TAG | (unsigned long long)m;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMulticastGetGranularity(size_t *g, const mcprop_t *prop, int option) {
	CUresult r = need_ctx();
	vmm_log("cuMulticastGetGranularity devices=%u option=%d", prop ? prop->numDevices : 0, option);
	if (r) return r;
	if (!prop || prop->numDevices < 1 || (option != 0 && option != 1)) return INVALID_VALUE;
	*g = GRAN;
	return OK;
}

EXPORT CUresult cuMulticastCreate(unsigned long long *h, const mcprop_t *prop) {
	CUresult r = need_ctx();
	vmm_log("cuMulticastCreate devices=%u size=%zu handleTypes=%llu", prop ? prop->numDevices : 0, prop ? prop->size : 0,
		prop ? prop->handleTypes : 0);
	if (r) return r;
	if (!prop || prop->numDevices < 1 || prop->numDevices > NDEV || prop->size == 0 || prop->size % GRAN || prop->flags != 0)
		return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int m = 0; m < MAXVMM; m++) {
		if (!mcs[m].live) {
			memset(&mcs[m], 0, sizeof mcs[m]);
			mcs[m].live = 1;
			mcs[m].refs = 1;
			mcs[m].numDevices = prop->numDevices;
			mcs[m].size = prop->size;
			mcs[m].handleTypes = prop->handleTypes;
			pthread_mutex_unlock(&mu);
			*h = MC_TAG | (unsigned long long)m;
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	return OUT_OF_MEMORY;
}

static int any_bound(int m) {
	for (int d = 0; d < NDEV; d++) {
		if (mcs[m].bound[d]) return 1;
	}
	return 0;
}

EXPORT CUresult cuMulticastAddDevice(unsigned long long h, CUdevice dev) {
	CUresult r = need_ctx();
	vmm_log("cuMulticastAddDevice dev=%d", dev);
	if (r) return r;
	pthread_mutex_lock(&mu);
	int m = mc_of(h);
	if (m < 0) r = INVALID_HANDLE;
	else if (dev < 0 || dev >= NDEV) r = INVALID_DEVICE;
	else if (mcs[m].added[dev] || mcs[m].nadded >= (int)mcs[m].numDevices || any_bound(m)) r = ILLEGAL_STATE;
	else {
		mcs[m].added[dev] = 1;
		mcs[m].nadded++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

// Binding needs every device of the object added, and binds for the
// device of the current context.
EXPORT CUresult cuMulticastBindMem(unsigned long long h, size_t mcOffset, unsigned long long mem, size_t memOffset, size_t size,
		unsigned long long flags) {
	CUresult r = need_ctx();
	vmm_log("cuMulticastBindMem dev=%d size=%zu", current ? current->dev : -1, size);
	if (r) return r;
	pthread_mutex_lock(&mu);
	int m = mc_of(h), i = phys_of(mem), dev = current->dev;
	if (m < 0 || i < 0) r = INVALID_HANDLE;
	else if (flags != 0 || mcOffset % GRAN || memOffset % GRAN || size == 0 || size % GRAN || mcOffset + size > mcs[m].size ||
			memOffset + size > phys[i].size || phys[i].dev != dev)
		r = INVALID_VALUE;
	else if (mcs[m].nadded < (int)mcs[m].numDevices || !mcs[m].added[dev] || mcs[m].bound[dev]) r = ILLEGAL_STATE;
	else mcs[m].bound[dev] = 1;
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMulticastUnbind(unsigned long long h, CUdevice dev, size_t mcOffset, size_t size) {
	CUresult r = need_ctx();
	vmm_log("cuMulticastUnbind dev=%d size=%zu", dev, size);
	if (r) return r;
	pthread_mutex_lock(&mu);
	int m = mc_of(h);
	if (m < 0) r = INVALID_HANDLE;
	else if (dev < 0 || dev >= NDEV || !mcs[m].bound[dev] || mcOffset != 0 || size != mcs[m].size) r = INVALID_VALUE;
	else mcs[m].bound[dev] = 0;
	pthread_mutex_unlock(&mu);
	return r;
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
	SYM("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
	SYM("cuMemCreate", 10020, cuMemCreate),
	SYM("cuMemRelease", 10020, cuMemRelease),
	SYM("cuMemAddressReserve", 10020, cuMemAddressReserve),
	SYM("cuMemAddressFree", 10020, cuMemAddressFree),
	SYM("cuMemMap", 10020, cuMemMap),
	SYM("cuMemUnmap", 10020, cuMemUnmap),
	SYM("cuMemSetAccess", 10020, cuMemSetAccess),
	SYM("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle),
	SYM("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
	SYM("cuMulticastGetGranularity", 12010, cuMulticastGetGranularity),
	SYM("cuMulticastCreate", 12010, cuMulticastCreate),
	SYM("cuMulticastAddDevice", 12010, cuMulticastAddDevice),
	SYM("cuMulticastBindMem", 12010, cuMulticastBindMem),
	SYM("cuMulticastUnbind", 12010, cuMulticastUnbind),
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
