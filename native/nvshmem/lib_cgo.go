//go:build cgo

package nvshmem

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#cgo CFLAGS: -I${SRCDIR}/../dl
#include "cuctx.h"

// nvshmemx_uniqueid_t, nvshmemx_uniqueid_args_t, nvshmemx_init_args_t (v2)
// and nvshmemx_init_attr_t as NVSHMEM 3.x lays them out.
typedef struct { int version; char internal[124]; } hc_uniqueid;
typedef struct { int version; hc_uniqueid *id; int myrank; int nranks; } hc_uid_args;
typedef struct { int version; hc_uid_args uid_args; int cuda_device_id; char content[92]; } hc_init_args;
typedef struct { int version; void *mpi_comm; hc_init_args args; } hc_init_attr;

_Static_assert(sizeof(hc_uniqueid) == 128, "nvshmemx_uniqueid_t is 128 bytes");
_Static_assert(sizeof(hc_uid_args) == 24, "nvshmemx_uniqueid_args_t is 24 bytes");
_Static_assert(sizeof(hc_init_args) == 128, "nvshmemx_init_args_t is 128 bytes");
_Static_assert(sizeof(hc_init_attr) == 144, "nvshmemx_init_attr_t is 144 bytes");
_Static_assert(offsetof(hc_init_attr, version) == 0, "attr.version");
_Static_assert(offsetof(hc_init_attr, mpi_comm) == 8, "attr.mpi_comm");
_Static_assert(offsetof(hc_init_attr, args) == 16, "attr.args");
_Static_assert(offsetof(hc_init_attr, args.version) == 16, "attr.args.version");
_Static_assert(offsetof(hc_init_attr, args.uid_args) == 24, "attr.args.uid_args");
_Static_assert(offsetof(hc_init_attr, args.uid_args.version) == 24, "attr.args.uid_args.version");
_Static_assert(offsetof(hc_init_attr, args.uid_args.id) == 32, "attr.args.uid_args.id");
_Static_assert(offsetof(hc_init_attr, args.uid_args.myrank) == 40, "attr.args.uid_args.myrank");
_Static_assert(offsetof(hc_init_attr, args.uid_args.nranks) == 44, "attr.args.uid_args.nranks");
_Static_assert(offsetof(hc_init_attr, args.cuda_device_id) == 48, "attr.args.cuda_device_id");
_Static_assert(offsetof(hc_init_attr, args.content) == 52, "attr.args.content");

// hc_attr_layout reports the C compiler's layout, for the Go side's tests.
static void hc_attr_layout(long *out) {
	out[0] = sizeof(hc_init_attr);
	out[1] = offsetof(hc_init_attr, version);
	out[2] = offsetof(hc_init_attr, mpi_comm);
	out[3] = offsetof(hc_init_attr, args.version);
	out[4] = offsetof(hc_init_attr, args.uid_args.version);
	out[5] = offsetof(hc_init_attr, args.uid_args.id);
	out[6] = offsetof(hc_init_attr, args.uid_args.myrank);
	out[7] = offsetof(hc_init_attr, args.uid_args.nranks);
	out[8] = offsetof(hc_init_attr, args.cuda_device_id);
	out[9] = offsetof(hc_init_attr, args.content);
	out[10] = sizeof(hc_uniqueid);
}

// The host-library entry points, with NVSHMEM's signatures (nvshmem_team_t
// is int32_t, cudaStream_t a pointer).
typedef struct {
	int (*getUniqueId)(hc_uniqueid *uid);
	int (*setAttrUniqueIdArgs)(int myrank, int nranks, const hc_uniqueid *uid, hc_init_attr *attr);
	int (*hostlibInitAttr)(unsigned int flags, hc_init_attr *attr);
	void (*hostlibFinalize)(void);
	int (*initStatus)(void);
	int (*myPE)(void);
	int (*nPEs)(void);
	int (*teamMyPE)(int32_t team);
	int (*teamNPEs)(int32_t team);
	void *(*malloc)(size_t size);
	void (*free)(void *p);
	void *(*ptr)(const void *p, int pe);
	void (*putmemOnStream)(void *dst, const void *src, size_t n, int pe, void *stream);
	void (*putmemSignalOnStream)(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t val, int op, int pe, void *stream);
	void (*signalWaitUntilOnStream)(uint64_t *sig, int cmp, uint64_t val, void *stream);
	void (*barrierAllOnStream)(void *stream);
	void (*vendorVersion)(int *major, int *minor, int *patch); // optional
	hc_cuda cu;
} hc_shmem;

// hc_fail records a failed NVSHMEM call: its status and its name.
static void hc_fail(hc_status *st, const char *call, int r) {
	st->res = r;
	hc_copy(st->text, sizeof st->text, call);
}

// hc_lib_path writes the path of the shared object that holds sym.
static int hc_lib_path(void *sym, char *buf, size_t n) {
	Dl_info info;
	if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) return -1;
	hc_copy(buf, n, info.dli_fname);
	return 0;
}

static void hc_shmem_unique_id(const hc_shmem *t, int version, void *out, hc_status *st) {
	hc_uniqueid uid;
	memset(&uid, 0, sizeof uid);
	uid.version = version;
	int r = t->getUniqueId(&uid);
	memcpy(out, &uid, sizeof uid);
	if (r != 0) hc_fail(st, "nvshmemx_get_uniqueid", r);
}

// hc_shmem_init retains ordinal's primary context, makes it current and
// starts NVSHMEM with the unique-id bootstrap. On failure the context is
// released again.
static void hc_shmem_init(const hc_shmem *t, unsigned int flags, int ordinal, int rank, int nranks,
                          hc_uniqueid *uid, hc_init_attr *attr, int *dev, void **ctx, int *status, int *pe,
                          int *npes, hc_status *st) {
	void *saved;
	int r;
	*ctx = NULL;
	if (hc_retain(&t->cu, ordinal, dev, ctx, st) != 0) return;
	if (hc_enter(&t->cu, *ctx, &saved, st) != 0) goto release;
	r = t->setAttrUniqueIdArgs(rank, nranks, uid, attr);
	if (r != 0) {
		hc_fail(st, "nvshmemx_set_attr_uniqueid_args", r);
		goto leave;
	}
	r = t->hostlibInitAttr(flags, attr);
	if (r != 0) {
		hc_fail(st, "nvshmemx_hostlib_init_attr", r);
		goto leave;
	}
	*status = t->initStatus();
	if (*status >= 2) { // NVSHMEM_STATUS_IS_INITIALIZED
		*pe = t->myPE();
		*npes = t->nPEs();
	}
	hc_leave(&t->cu, *ctx, saved);
	return;
leave:
	hc_leave(&t->cu, *ctx, saved);
release:
	t->cu.primaryCtxRelease(*dev);
	*ctx = NULL;
}

static void hc_shmem_finalize(const hc_shmem *t, void *ctx, int dev, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) == 0) {
		t->hostlibFinalize();
		hc_leave(&t->cu, ctx, saved);
	}
	int r = t->cu.primaryCtxRelease(dev);
	if (r != 0 && st->cuCall == NULL) hc_cufail(&t->cu, st, "cuDevicePrimaryCtxRelease_v2", r);
}

static void hc_shmem_malloc(const hc_shmem *t, void *ctx, size_t size, uint64_t *p, hc_status *st) {
	void *saved;
	*p = 0;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	*p = (uint64_t)(uintptr_t)t->malloc(size);
	hc_leave(&t->cu, ctx, saved);
}

static void hc_shmem_free(const hc_shmem *t, void *ctx, uint64_t p, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	t->free((void *)(uintptr_t)p);
	hc_leave(&t->cu, ctx, saved);
}

static uint64_t hc_shmem_ptr(const hc_shmem *t, uint64_t p, int pe) {
	return (uint64_t)(uintptr_t)t->ptr((const void *)(uintptr_t)p, pe);
}

static void hc_shmem_put(const hc_shmem *t, void *ctx, uint64_t dst, uint64_t src, size_t n, int pe,
                         uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	t->putmemOnStream((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, pe, (void *)stream);
	hc_leave(&t->cu, ctx, saved);
}

static void hc_shmem_put_signal(const hc_shmem *t, void *ctx, uint64_t dst, uint64_t src, size_t n,
                                uint64_t sig, uint64_t val, int op, int pe, uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	t->putmemSignalOnStream((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, (uint64_t *)(uintptr_t)sig,
	                        val, op, pe, (void *)stream);
	hc_leave(&t->cu, ctx, saved);
}

static void hc_shmem_wait(const hc_shmem *t, void *ctx, uint64_t sig, int cmp, uint64_t val, uintptr_t stream,
                          hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	t->signalWaitUntilOnStream((uint64_t *)(uintptr_t)sig, cmp, val, (void *)stream);
	hc_leave(&t->cu, ctx, saved);
}

static void hc_shmem_barrier(const hc_shmem *t, void *ctx, uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	t->barrierAllOnStream((void *)stream);
	hc_leave(&t->cu, ctx, saved);
}

static int hc_shmem_team(const hc_shmem *t, int32_t team, int npes) {
	return npes ? t->teamNPEs(team) : t->teamMyPE(team);
}

static void hc_shmem_version(const hc_shmem *t, int *v) {
	t->vendorVersion(&v[0], &v[1], &v[2]);
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// Lib is the loaded NVSHMEM host library (and libcuda, for the contexts),
// and NVSHMEM's state in this process: there is one of each per process.
type Lib struct {
	path   string // the name or path it was opened by
	file   string // the file it was loaded from, where known
	plugin string // the NVSHMEM_BOOTSTRAP_UID_PLUGIN this package set, if any
	lib    *dl.Library
	cuda   *dl.Library
	t      *C.hc_shmem // C memory: the entry points

	// mu serialises every call into NVSHMEM, which is initialised
	// NVSHMEM_THREAD_SERIALIZED, and guards the state below.
	mu      sync.Mutex
	ready   bool
	rank    int
	nranks  int
	ordinal int
	ctx     unsafe.Pointer // the device's primary CUcontext, retained from Init to Finalize
	dev     C.int
	uid     unsafe.Pointer // C memory: the unique id attr points to
	attr    unsafe.Pointer // C memory: the nvshmemx_init_attr_t
	allocs  map[Ptr]int64
}

var (
	loadMu sync.Mutex
	loaded *Lib
)

// Load opens the NVSHMEM host library (see the package doc for where it
// looks) and libcuda.so.1, and prepares the environment NVSHMEM reads: it
// sets NVSHMEM_DISABLE_NVLS=1 when unset (and refuses a false value), and
// NVSHMEM_BOOTSTRAP_UID_PLUGIN to the plugin beside the library when unset.
// A successful load is cached; a failed one is retried on the next call. It
// fails with an error wrapping hcerr.ErrNotSupported when a library is
// missing, naming every candidate tried.
func Load() (*Lib, error) {
	if err := nvlsOff.Ensure(os.LookupEnv, os.Setenv); err != nil {
		return nil, err
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != nil {
		return loaded, nil
	}
	libs, searched := candidates()
	l, err := load(libs, searched)
	if err != nil {
		return nil, err
	}
	if l.file != "" {
		p, err := pluginEnv(filepath.Dir(l.file), os.LookupEnv, os.Setenv)
		if err != nil {
			return nil, err
		}
		l.plugin = p
	}
	loaded = l
	return l, nil
}

// load opens the first of libs that loads and resolves what hiercoll calls.
func load(libs, searched []string) (*Lib, error) {
	slib, err := dl.Open(libs...)
	if err != nil {
		return nil, errNotLoaded(libs, searched, err)
	}
	cuda, err := dl.Open("libcuda.so.1")
	if err != nil {
		_ = slib.Close()
		return nil, fmt.Errorf("nvshmem: %s loaded but the CUDA driver did not: %w: %w", slib.Path, hcerr.ErrNotSupported, err)
	}
	t := (*C.hc_shmem)(C.calloc(1, C.size_t(unsafe.Sizeof(C.hc_shmem{}))))
	fail := func(err error) (*Lib, error) {
		C.free(unsafe.Pointer(t))
		_ = cuda.Close()
		_ = slib.Close()
		return nil, fmt.Errorf("nvshmem: %s: %w: %w", slib.Path, hcerr.ErrNotSupported, err)
	}
	syms := []dl.Symbol{
		{Lib: slib, Name: "nvshmemx_get_uniqueid", Dst: &t.getUniqueId},
		{Lib: slib, Name: "nvshmemx_set_attr_uniqueid_args", Dst: &t.setAttrUniqueIdArgs},
		{Lib: slib, Name: "nvshmemx_hostlib_init_attr", Dst: &t.hostlibInitAttr},
		{Lib: slib, Name: "nvshmemx_hostlib_finalize", Dst: &t.hostlibFinalize},
		{Lib: slib, Name: "nvshmemx_init_status", Dst: &t.initStatus},
		{Lib: slib, Name: "nvshmem_my_pe", Dst: &t.myPE},
		{Lib: slib, Name: "nvshmem_n_pes", Dst: &t.nPEs},
		{Lib: slib, Name: "nvshmem_team_my_pe", Dst: &t.teamMyPE},
		{Lib: slib, Name: "nvshmem_team_n_pes", Dst: &t.teamNPEs},
		{Lib: slib, Name: "nvshmem_malloc", Dst: &t.malloc},
		{Lib: slib, Name: "nvshmem_free", Dst: &t.free},
		{Lib: slib, Name: "nvshmem_ptr", Dst: &t.ptr},
		{Lib: slib, Name: "nvshmemx_putmem_on_stream", Dst: &t.putmemOnStream},
		{Lib: slib, Name: "nvshmemx_putmem_signal_on_stream", Dst: &t.putmemSignalOnStream},
		{Lib: slib, Name: "nvshmemx_signal_wait_until_on_stream", Dst: &t.signalWaitUntilOnStream},
		{Lib: slib, Name: "nvshmemx_barrier_all_on_stream", Dst: &t.barrierAllOnStream},
		{Lib: slib, Name: "nvshmemx_vendor_get_version_info", Dst: &t.vendorVersion, Optional: true},
	}
	syms = append(syms, dl.DriverSymbols(cuda, unsafe.Pointer(&t.cu))...)
	anchor, err := dl.Resolve(syms)
	if err != nil {
		return fail(err)
	}
	l := &Lib{path: slib.Path, lib: slib, cuda: cuda, t: t}
	var buf [4096]C.char
	if C.hc_lib_path(anchor, &buf[0], C.size_t(len(buf))) == 0 {
		l.file = C.GoString(&buf[0])
	}
	return l, nil
}

// Path is the name or path the host library was opened by.
func (l *Lib) Path() string { return l.path }

// File is the file the host library was loaded from ("" if the loader did
// not say).
func (l *Lib) File() string { return l.file }

// Version is NVSHMEM's own version (nvshmemx_vendor_get_version_info).
func (l *Lib) Version() (major, minor, patch int, err error) {
	if l.t.vendorVersion == nil {
		return 0, 0, 0, fmt.Errorf("nvshmem: %s has no nvshmemx_vendor_get_version_info: %w", l.path, hcerr.ErrNotSupported)
	}
	var v [3]C.int
	C.hc_shmem_version(l.t, &v[0])
	return int(v[0]), int(v[1]), int(v[2]), nil
}

// UniqueID creates the 128-byte id one PE (by convention rank 0) hands to
// every PE for Init. It starts the unique-id bootstrap's listener here.
func (l *Lib) UniqueID() ([]byte, error) {
	if err := nvlsOff.Ensure(os.LookupEnv, os.Setenv); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	uid := make([]byte, UniqueIDSize)
	var st C.hc_status
	C.hc_shmem_unique_id(l.t, uniqueIDVersion, unsafe.Pointer(&uid[0]), &st)
	if err := statusError(&st); err != nil {
		return nil, err
	}
	return uid, nil
}

// Init starts NVSHMEM as PE rank of nranks on CUDA device ordinal (an index
// as the driver counts them), bootstrapped by uid from UniqueID. It is
// collective: it returns once every PE has joined. Set the environment (see
// the package doc) before calling it.
func (l *Lib) Init(rank, nranks int, uid []byte, ordinal int) error {
	if nranks < 1 || rank < 0 || rank >= nranks {
		return fmt.Errorf("nvshmem: Init: rank %d of %d PEs: %w", rank, nranks, hcerr.ErrInvalidArgument)
	}
	if len(uid) != UniqueIDSize {
		return fmt.Errorf("nvshmem: Init: unique id of %d bytes, want %d: %w", len(uid), UniqueIDSize, hcerr.ErrInvalidArgument)
	}
	if ordinal < 0 {
		return fmt.Errorf("nvshmem: Init: device ordinal %d: %w", ordinal, hcerr.ErrInvalidArgument)
	}
	if err := nvlsOff.Ensure(os.LookupEnv, os.Setenv); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ready {
		return fmt.Errorf("nvshmem: Init: already initialised as PE %d of %d: %w", l.rank, l.nranks, hcerr.ErrInvalidArgument)
	}
	// Both stay allocated until Finalize: NVSHMEM keeps pointers to them.
	// After a failed Init they are not freed, since NVSHMEM may still
	// hold them.
	uidMem := C.CBytes(uid)
	attr := packInitAttr(rank, nranks, ordinal, uintptr(uidMem))
	attrMem := C.CBytes(attr[:])

	var st C.hc_status
	var dev, status, pe, npes C.int
	var ctx unsafe.Pointer
	C.hc_shmem_init(l.t, initWithUniqueID, C.int(ordinal), C.int(rank), C.int(nranks), (*C.hc_uniqueid)(uidMem),
		(*C.hc_init_attr)(attrMem), &dev, &ctx, &status, &pe, &npes, &st)
	if err := statusError(&st); err != nil {
		return fmt.Errorf("%w (PE %d of %d on device %d)", err, rank, nranks, ordinal)
	}
	l.ready, l.rank, l.nranks, l.ordinal = true, rank, nranks, ordinal
	l.ctx, l.dev, l.uid, l.attr = ctx, dev, uidMem, attrMem
	l.allocs = map[Ptr]int64{}
	if status < statusInitialized {
		return fmt.Errorf("nvshmem: PE %d of %d on device %d bootstrapped but did not initialise "+
			"(nvshmemx_init_status %d; NVSHMEM_DEBUG=INFO shows why); call Finalize", rank, nranks, ordinal, int(status))
	}
	if int(pe) != rank || int(npes) != nranks {
		return fmt.Errorf("nvshmem: initialised as PE %d of %d, asked for %d of %d: %w",
			int(pe), int(npes), rank, nranks, hcerr.ErrPeer)
	}
	return nil
}

// Finalize shuts NVSHMEM down (collective) and releases the device's
// primary context. Symmetric allocations still live are gone with the heap;
// free them first (Live counts them). Calling it when not initialised does
// nothing.
func (l *Lib) Finalize() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		return nil
	}
	var st C.hc_status
	C.hc_shmem_finalize(l.t, l.ctx, l.dev, &st)
	C.free(l.attr)
	C.free(l.uid)
	l.ready, l.ctx, l.attr, l.uid, l.allocs = false, nil, nil, nil, nil
	return statusError(&st)
}

// MyPE is this PE's index, -1 before Init.
func (l *Lib) MyPE() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		return -1
	}
	return l.rank
}

// NPEs is the number of PEs, 0 before Init.
func (l *Lib) NPEs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		return 0
	}
	return l.nranks
}

// TeamMyPE is this PE's index in team (-1 if not a member or before Init):
// TeamMyPE(TeamNode) is the local rank on this host.
func (l *Lib) TeamMyPE(team Team) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready || !team.valid() {
		return -1
	}
	return int(C.hc_shmem_team(l.t, C.int32_t(team), 0))
}

// TeamNPEs is the number of PEs in team (0 before Init).
func (l *Lib) TeamNPEs(team Team) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready || !team.valid() {
		return 0
	}
	return int(C.hc_shmem_team(l.t, C.int32_t(team), 1))
}

func (t Team) valid() bool { return t >= TeamWorld && t <= TeamSameMyPENode }

// Live is the number of symmetric allocations not yet freed.
func (l *Lib) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.allocs)
}

// Malloc allocates size bytes of the symmetric heap. It is collective: every
// PE calls it with the same size, in the same order, and gets memory at the
// same offset of its heap.
func (l *Lib) Malloc(size int64) (Ptr, error) {
	if size <= 0 {
		return 0, fmt.Errorf("nvshmem: Malloc(%d): %w", size, hcerr.ErrInvalidArgument)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readyLocked("nvshmem_malloc"); err != nil {
		return 0, err
	}
	var st C.hc_status
	var p C.uint64_t
	C.hc_shmem_malloc(l.t, l.ctx, C.size_t(size), &p, &st)
	if err := statusError(&st); err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, fmt.Errorf("nvshmem: nvshmem_malloc(%d) failed: the symmetric heap is too small "+
			"(NVSHMEM_SYMMETRIC_SIZE=%q; %d bytes live in %d allocations)",
			size, os.Getenv("NVSHMEM_SYMMETRIC_SIZE"), l.liveBytesLocked(), len(l.allocs))
	}
	l.allocs[Ptr(p)] = size
	return Ptr(p), nil
}

// Free releases memory from Malloc (collective, like Malloc).
func (l *Lib) Free(p Ptr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readyLocked("nvshmem_free"); err != nil {
		return err
	}
	if _, ok := l.allocs[p]; !ok {
		return fmt.Errorf("nvshmem: Free(%v): not an allocation of Malloc: %w", p, hcerr.ErrInvalidArgument)
	}
	var st C.hc_status
	C.hc_shmem_free(l.t, l.ctx, C.uint64_t(p), &st)
	if err := statusError(&st); err != nil {
		return err
	}
	delete(l.allocs, p)
	return nil
}

// Ptr returns the address at which this PE can load and store pe's copy of
// symmetric address p (over NVLink or locally), or 0 when pe's memory is not
// directly addressable from here (another host) or p is not symmetric.
func (l *Lib) Ptr(p Ptr, pe int) Ptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready || pe < 0 || pe >= l.nranks || !l.inHeapLocked(p, 1) {
		return 0
	}
	return Ptr(C.hc_shmem_ptr(l.t, C.uint64_t(p), C.int(pe)))
}

// PutOnStream enqueues on stream a copy of bytes bytes from src (device
// memory here) to symmetric address dst on PE pe.
func (l *Lib) PutOnStream(dst, src Ptr, bytes int64, pe int, stream uintptr) error {
	const op = "nvshmemx_putmem_on_stream"
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkPutLocked(op, dst, src, bytes, pe); err != nil {
		return err
	}
	var st C.hc_status
	C.hc_shmem_put(l.t, l.ctx, C.uint64_t(dst), C.uint64_t(src), C.size_t(bytes), C.int(pe), C.uintptr_t(stream), &st)
	return statusError(&st)
}

// PutSignalOnStream enqueues on stream a put like PutOnStream followed by an
// update of the 64-bit signal word at symmetric address sig on PE pe, by op
// with sigVal; the signal is ordered after the data.
func (l *Lib) PutSignalOnStream(dst, src Ptr, bytes int64, sig Ptr, sigVal uint64, op SignalOp, pe int, stream uintptr) error {
	const call = "nvshmemx_putmem_signal_on_stream"
	if op != SignalSet && op != SignalAdd {
		return fmt.Errorf("nvshmem: %s: signal operation %v: %w", call, op, hcerr.ErrInvalidArgument)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkPutLocked(call, dst, src, bytes, pe); err != nil {
		return err
	}
	if err := l.checkSignalLocked(call, sig); err != nil {
		return err
	}
	var st C.hc_status
	C.hc_shmem_put_signal(l.t, l.ctx, C.uint64_t(dst), C.uint64_t(src), C.size_t(bytes), C.uint64_t(sig),
		C.uint64_t(sigVal), C.int(op), C.int(pe), C.uintptr_t(stream), &st)
	return statusError(&st)
}

// SignalWaitUntilOnStream makes stream wait until the local signal word at
// symmetric address sig satisfies "word cmp val". The wait is on the GPU and
// unbounded: a PE that never signals stalls the stream, so the host bounds
// its own wait for the stream (a stream synchronize with a deadline).
func (l *Lib) SignalWaitUntilOnStream(sig Ptr, cmp Cmp, val uint64, stream uintptr) error {
	const call = "nvshmemx_signal_wait_until_on_stream"
	if cmp < CmpEQ || cmp > CmpGE {
		return fmt.Errorf("nvshmem: %s: comparison %d: %w", call, int32(cmp), hcerr.ErrInvalidArgument)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readyLocked(call); err != nil {
		return err
	}
	if err := l.checkSignalLocked(call, sig); err != nil {
		return err
	}
	var st C.hc_status
	C.hc_shmem_wait(l.t, l.ctx, C.uint64_t(sig), C.int(cmp), C.uint64_t(val), C.uintptr_t(stream), &st)
	return statusError(&st)
}

// BarrierAllOnStream enqueues on stream a barrier of all PEs that also
// completes this PE's earlier puts.
func (l *Lib) BarrierAllOnStream(stream uintptr) error {
	const call = "nvshmemx_barrier_all_on_stream"
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readyLocked(call); err != nil {
		return err
	}
	var st C.hc_status
	C.hc_shmem_barrier(l.t, l.ctx, C.uintptr_t(stream), &st)
	return statusError(&st)
}

// readyLocked fails calls made before Init (NVSHMEM would exit the process).
func (l *Lib) readyLocked(call string) error {
	if !l.ready {
		return fmt.Errorf("nvshmem: %s before Init (or after Finalize): %w", call, hcerr.ErrClosed)
	}
	return nil
}

func (l *Lib) checkPutLocked(call string, dst, src Ptr, bytes int64, pe int) error {
	if err := l.readyLocked(call); err != nil {
		return err
	}
	if bytes < 0 {
		return fmt.Errorf("nvshmem: %s: %d bytes: %w", call, bytes, hcerr.ErrInvalidArgument)
	}
	if pe < 0 || pe >= l.nranks {
		return fmt.Errorf("nvshmem: %s: PE %d of %d: %w", call, pe, l.nranks, hcerr.ErrInvalidArgument)
	}
	if bytes > 0 && src == 0 {
		return fmt.Errorf("nvshmem: %s: null source: %w", call, hcerr.ErrInvalidArgument)
	}
	if bytes > 0 && !l.inHeapLocked(dst, bytes) {
		return fmt.Errorf("nvshmem: %s: destination %v+%d is not inside one symmetric allocation: %w",
			call, dst, bytes, hcerr.ErrInvalidArgument)
	}
	return nil
}

func (l *Lib) checkSignalLocked(call string, sig Ptr) error {
	if sig%8 != 0 || !l.inHeapLocked(sig, 8) {
		return fmt.Errorf("nvshmem: %s: signal %v is not an aligned 64-bit word of a symmetric allocation: %w",
			call, sig, hcerr.ErrInvalidArgument)
	}
	return nil
}

// inHeapLocked reports whether [p, p+n) lies inside one live allocation.
func (l *Lib) inHeapLocked(p Ptr, n int64) bool {
	for base, size := range l.allocs {
		if p >= base && int64(p-base)+n <= size {
			return true
		}
	}
	return false
}

func (l *Lib) liveBytesLocked() int64 {
	var n int64
	for _, size := range l.allocs {
		n += size
	}
	return n
}

// statusError turns what a trampoline reported into an error.
func statusError(st *C.hc_status) error {
	if st.cuCall != nil {
		return &CUDAError{Lib: "nvshmem", Call: C.GoString(st.cuCall), Code: int(st.cu), Name: C.GoString(&st.cuName[0])}
	}
	if st.res != 0 {
		return &Error{Call: C.GoString(&st.text[0]), Code: int(st.res)}
	}
	return nil
}

// cAttrLayout is the C compiler's view of nvshmemx_init_attr_t, for tests:
// size, then the offsets of version, mpi_comm, args.version,
// uid_args.version, uid_args.id, myrank, nranks, cuda_device_id and the
// reserved bytes, then the size of the unique id.
func cAttrLayout() [11]int {
	var out [11]C.long
	C.hc_attr_layout(&out[0])
	var r [11]int
	for i, v := range out {
		r[i] = int(v)
	}
	return r
}
