//go:build cgo

package nccl

/*
#include <stdlib.h>
#include <string.h>
#cgo CFLAGS: -I${SRCDIR}/../dl
#include "cuctx.h"

typedef struct { char internal[128]; } hc_ncclUniqueId;

_Static_assert(sizeof(hc_ncclUniqueId) == 128, "ncclUniqueId is NCCL_UNIQUE_ID_BYTES = 128 bytes");

// The NCCL entry points, with nccl.h's signatures; enums are int-sized.
typedef struct {
	int (*getVersion)(int *version);
	int (*getUniqueId)(hc_ncclUniqueId *id);
	int (*commInitRank)(void **comm, int nranks, hc_ncclUniqueId id, int rank);
	int (*commDestroy)(void *comm);
	int (*commAbort)(void *comm);
	int (*commGetAsyncError)(void *comm, int *asyncError);
	int (*reduceScatter)(const void *send, void *recv, size_t recvcount, int dt, int op, void *comm, void *stream);
	int (*allReduce)(const void *send, void *recv, size_t count, int dt, int op, void *comm, void *stream);
	int (*send)(const void *buf, size_t count, int dt, int peer, void *comm, void *stream);
	int (*recv)(void *buf, size_t count, int dt, int peer, void *comm, void *stream);
	int (*groupStart)(void);
	int (*groupEnd)(void);
	const char *(*getErrorString)(int result);
	const char *(*getLastError)(void *comm); // optional (NCCL >= 2.13)
	hc_cuda cu;
} hc_nccl;

// hc_nccl_done records an NCCL result and, on failure, its texts: the last
// error is per thread, so it is read here, on the thread that failed.
static void hc_nccl_done(const hc_nccl *t, void *comm, hc_status *st, int res) {
	st->res = res;
	if (res == 0) return;
	if (t->getErrorString != NULL) hc_copy(st->text, sizeof st->text, t->getErrorString(res));
	if (t->getLastError != NULL) hc_copy(st->detail, sizeof st->detail, t->getLastError(comm));
}

static void hc_nccl_version(const hc_nccl *t, int *v, hc_status *st) {
	hc_nccl_done(t, NULL, st, t->getVersion(v));
}

static void hc_nccl_unique_id(const hc_nccl *t, void *out, hc_status *st) {
	hc_ncclUniqueId id;
	memset(&id, 0, sizeof id);
	int r = t->getUniqueId(&id);
	memcpy(out, &id, sizeof id);
	hc_nccl_done(t, NULL, st, r);
}

// hc_nccl_init retains the primary context of ordinal, makes it current and
// creates the communicator. On failure nothing stays retained.
static void hc_nccl_init(const hc_nccl *t, int ordinal, int nranks, const void *idBytes, int rank,
                         void **comm, void **ctx, int *dev, hc_status *st) {
	hc_ncclUniqueId id;
	void *saved;
	memcpy(&id, idBytes, sizeof id);
	*comm = NULL;
	*ctx = NULL;
	if (hc_retain(&t->cu, ordinal, dev, ctx, st) != 0) return;
	if (hc_enter(&t->cu, *ctx, &saved, st) != 0) {
		t->cu.primaryCtxRelease(*dev);
		*ctx = NULL;
		return;
	}
	hc_nccl_done(t, NULL, st, t->commInitRank(comm, nranks, id, rank));
	hc_leave(&t->cu, *ctx, saved);
	if (st->res != 0) {
		t->cu.primaryCtxRelease(*dev);
		*ctx = NULL;
		*comm = NULL;
	}
}

// hc_nccl_destroy frees the communicator and releases the context, which is
// released even when it could not be made current.
static void hc_nccl_destroy(const hc_nccl *t, void *comm, void *ctx, int dev, int abort, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) == 0) {
		hc_nccl_done(t, comm, st, abort ? t->commAbort(comm) : t->commDestroy(comm));
		hc_leave(&t->cu, ctx, saved);
	}
	int r = t->cu.primaryCtxRelease(dev);
	if (r != 0 && st->cuCall == NULL && st->res == 0) hc_cufail(&t->cu, st, "cuDevicePrimaryCtxRelease_v2", r);
}

// hc_nccl_async_error reports the communicator's asynchronous error as the
// result, so that it arrives with its texts.
static void hc_nccl_async_error(const hc_nccl *t, void *comm, hc_status *st) {
	int async = 0;
	int r = t->commGetAsyncError(comm, &async);
	hc_nccl_done(t, comm, st, r != 0 ? r : async);
}

static void hc_nccl_reduce_scatter(const hc_nccl *t, void *comm, void *ctx, uint64_t send, uint64_t recv,
                                   size_t count, int dt, int op, uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	hc_nccl_done(t, comm, st, t->reduceScatter((const void *)(uintptr_t)send, (void *)(uintptr_t)recv,
	                                           count, dt, op, comm, (void *)stream));
	hc_leave(&t->cu, ctx, saved);
}

static void hc_nccl_all_reduce(const hc_nccl *t, void *comm, void *ctx, uint64_t send, uint64_t recv,
                               size_t count, int dt, int op, uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	hc_nccl_done(t, comm, st, t->allReduce((const void *)(uintptr_t)send, (void *)(uintptr_t)recv,
	                                       count, dt, op, comm, (void *)stream));
	hc_leave(&t->cu, ctx, saved);
}

static void hc_nccl_p2p(const hc_nccl *t, void *comm, void *ctx, int isSend, uint64_t buf, size_t count,
                        int dt, int peer, uintptr_t stream, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	if (isSend)
		hc_nccl_done(t, comm, st, t->send((const void *)(uintptr_t)buf, count, dt, peer, comm, (void *)stream));
	else
		hc_nccl_done(t, comm, st, t->recv((void *)(uintptr_t)buf, count, dt, peer, comm, (void *)stream));
	hc_leave(&t->cu, ctx, saved);
}

static void hc_nccl_group(const hc_nccl *t, void *ctx, int end, hc_status *st) {
	void *saved;
	if (hc_enter(&t->cu, ctx, &saved, st) != 0) return;
	hc_nccl_done(t, NULL, st, end ? t->groupEnd() : t->groupStart());
	hc_leave(&t->cu, ctx, saved);
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// Lib is the loaded NCCL library (and libcuda, for the contexts). There is
// one per process; it is never unloaded.
type Lib struct {
	path string
	nccl *dl.Library
	cuda *dl.Library
	t    *C.hc_nccl // C memory: the entry points
}

var (
	loadMu sync.Mutex
	loaded *Lib
)

// Load opens NCCL (see the package doc for where it looks) and libcuda.so.1.
// A successful load is cached; a failed one is retried on the next call. It
// fails with an error wrapping hcerr.ErrNotSupported when either library is
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
	loaded = l
	return l, nil
}

// load opens the first of libs that loads and resolves what hiercoll calls.
func load(libs, searched []string) (*Lib, error) {
	nlib, err := dl.Open(libs...)
	if err != nil {
		return nil, errNotLoaded(libs, searched, err)
	}
	cuda, err := dl.Open("libcuda.so.1")
	if err != nil {
		_ = nlib.Close()
		return nil, fmt.Errorf("nccl: %s loaded but the CUDA driver did not: %w: %w", nlib.Path, hcerr.ErrNotSupported, err)
	}
	t := (*C.hc_nccl)(C.calloc(1, C.size_t(unsafe.Sizeof(C.hc_nccl{}))))
	fail := func(err error) (*Lib, error) {
		C.free(unsafe.Pointer(t))
		_ = cuda.Close()
		_ = nlib.Close()
		return nil, fmt.Errorf("nccl: %s: %w: %w", nlib.Path, hcerr.ErrNotSupported, err)
	}
	syms := []dl.Symbol{
		{Lib: nlib, Name: "ncclGetVersion", Dst: &t.getVersion},
		{Lib: nlib, Name: "ncclGetUniqueId", Dst: &t.getUniqueId},
		{Lib: nlib, Name: "ncclCommInitRank", Dst: &t.commInitRank},
		{Lib: nlib, Name: "ncclCommDestroy", Dst: &t.commDestroy},
		{Lib: nlib, Name: "ncclCommAbort", Dst: &t.commAbort},
		{Lib: nlib, Name: "ncclCommGetAsyncError", Dst: &t.commGetAsyncError},
		{Lib: nlib, Name: "ncclReduceScatter", Dst: &t.reduceScatter},
		{Lib: nlib, Name: "ncclAllReduce", Dst: &t.allReduce},
		{Lib: nlib, Name: "ncclSend", Dst: &t.send},
		{Lib: nlib, Name: "ncclRecv", Dst: &t.recv},
		{Lib: nlib, Name: "ncclGroupStart", Dst: &t.groupStart},
		{Lib: nlib, Name: "ncclGroupEnd", Dst: &t.groupEnd},
		{Lib: nlib, Name: "ncclGetErrorString", Dst: &t.getErrorString},
		{Lib: nlib, Name: "ncclGetLastError", Dst: &t.getLastError, Optional: true},
	}
	syms = append(syms, dl.DriverSymbols(cuda, unsafe.Pointer(&t.cu))...)
	if _, err := dl.Resolve(syms); err != nil {
		return fail(err)
	}
	return &Lib{path: nlib.Path, nccl: nlib, cuda: cuda, t: t}, nil
}

// Path is the name or path the library was opened by.
func (l *Lib) Path() string { return l.path }

// Version returns ncclGetVersion's code (22803 for 2.28.3; see DecodeVersion).
func (l *Lib) Version() (int, error) {
	var st C.hc_status
	var v C.int
	C.hc_nccl_version(l.t, &v, &st)
	if err := statusError("ncclGetVersion", &st); err != nil {
		return 0, err
	}
	return int(v), nil
}

// UniqueID creates the id one rank (by convention rank 0) hands to every
// rank for InitRank. It starts NCCL's bootstrap listener on this process.
func (l *Lib) UniqueID() ([UniqueIDSize]byte, error) {
	var id [UniqueIDSize]byte
	var st C.hc_status
	C.hc_nccl_unique_id(l.t, unsafe.Pointer(&id[0]), &st)
	if err := statusError("ncclGetUniqueId", &st); err != nil {
		return [UniqueIDSize]byte{}, err
	}
	return id, nil
}

// liveComms counts communicators not yet destroyed, for leak checks in tests.
var liveComms atomic.Int64

// Comm is an NCCL communicator bound to one CUDA device.
type Comm struct {
	lib     *Lib
	nranks  int
	rank    int
	ordinal int

	mu   sync.Mutex
	comm unsafe.Pointer // ncclComm_t (C memory); nil once destroyed
	ctx  unsafe.Pointer // the device's primary CUcontext, retained while the Comm lives
	dev  C.int
}

// InitRank joins communicator id as rank of nranks on CUDA device ordinal
// (an index as the driver counts them, after CUDA_VISIBLE_DEVICES). It is
// collective: it returns once all nranks ranks have called it. The device's
// primary context is retained until Destroy and made current around every
// NCCL call of the Comm, so callers need not manage contexts or threads.
func (l *Lib) InitRank(nranks int, id [UniqueIDSize]byte, rank int, ordinal int) (*Comm, error) {
	if nranks < 1 || rank < 0 || rank >= nranks {
		return nil, fmt.Errorf("nccl: InitRank: rank %d of %d ranks: %w", rank, nranks, hcerr.ErrInvalidArgument)
	}
	if ordinal < 0 {
		return nil, fmt.Errorf("nccl: InitRank: device ordinal %d: %w", ordinal, hcerr.ErrInvalidArgument)
	}
	var st C.hc_status
	var comm, ctx unsafe.Pointer
	var dev C.int
	C.hc_nccl_init(l.t, C.int(ordinal), C.int(nranks), unsafe.Pointer(&id[0]), C.int(rank), &comm, &ctx, &dev, &st)
	if err := statusError("ncclCommInitRank", &st); err != nil {
		return nil, fmt.Errorf("%w (rank %d of %d on device %d)", err, rank, nranks, ordinal)
	}
	liveComms.Add(1)
	return &Comm{lib: l, nranks: nranks, rank: rank, ordinal: ordinal, comm: comm, ctx: ctx, dev: dev}, nil
}

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int { return c.nranks }

// Rank is this rank's index in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Ordinal is the CUDA device the communicator runs on.
func (c *Comm) Ordinal() int { return c.ordinal }

// lock takes the Comm for one call and fails if it was destroyed.
func (c *Comm) lock(op string) error {
	c.mu.Lock()
	if c.comm == nil {
		c.mu.Unlock()
		return fmt.Errorf("nccl: %s on a destroyed communicator: %w", op, hcerr.ErrClosed)
	}
	return nil
}

// ReduceScatter enqueues on stream the sum over all ranks of send (nranks ×
// recvCount elements of dt), leaving block rank of the result in recv
// (recvCount elements). In place when recv == send + rank*recvCount*size.
func (c *Comm) ReduceScatter(send, recv Ptr, recvCount int64, dt dtype.DType, stream uintptr) error {
	const op = "ncclReduceScatter"
	t, err := checkBuffers(op, dt, recvCount, send, recv)
	if err != nil {
		return err
	}
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	var st C.hc_status
	C.hc_nccl_reduce_scatter(c.lib.t, c.comm, c.ctx, C.uint64_t(send), C.uint64_t(recv), C.size_t(recvCount),
		C.int(t), C.int(Sum), C.uintptr_t(stream), &st)
	return statusError(op, &st)
}

// AllReduce enqueues on stream the sum over all ranks of send (count
// elements of dt) into recv on every rank. In place when recv == send.
func (c *Comm) AllReduce(send, recv Ptr, count int64, dt dtype.DType, stream uintptr) error {
	const op = "ncclAllReduce"
	t, err := checkBuffers(op, dt, count, send, recv)
	if err != nil {
		return err
	}
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	var st C.hc_status
	C.hc_nccl_all_reduce(c.lib.t, c.comm, c.ctx, C.uint64_t(send), C.uint64_t(recv), C.size_t(count),
		C.int(t), C.int(Sum), C.uintptr_t(stream), &st)
	return statusError(op, &st)
}

// Send enqueues sending count elements of dt at buf to rank peer, which must
// post a matching Recv. Pair sends and receives of one step inside a group
// (Group, or GroupStart/GroupEnd), or they may wait on each other.
func (c *Comm) Send(buf Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error {
	return c.p2p("ncclSend", true, buf, count, dt, peer, stream)
}

// Recv enqueues receiving count elements of dt from rank peer into buf.
func (c *Comm) Recv(buf Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error {
	return c.p2p("ncclRecv", false, buf, count, dt, peer, stream)
}

func (c *Comm) p2p(op string, isSend bool, buf Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error {
	t, err := checkBuffers(op, dt, count, buf)
	if err != nil {
		return err
	}
	if peer < 0 || peer >= c.nranks {
		return fmt.Errorf("nccl: %s: peer %d of %d ranks: %w", op, peer, c.nranks, hcerr.ErrInvalidArgument)
	}
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	send := C.int(0)
	if isSend {
		send = 1
	}
	var st C.hc_status
	C.hc_nccl_p2p(c.lib.t, c.comm, c.ctx, send, C.uint64_t(buf), C.size_t(count), C.int(t), C.int(peer),
		C.uintptr_t(stream), &st)
	return statusError(op, &st)
}

// GroupStart opens an NCCL group on the calling goroutine: NCCL calls made
// from it until GroupEnd (on this or other Comms) are launched together.
// NCCL keeps groups per OS thread, so GroupStart locks the goroutine to its
// thread until the matching GroupEnd; both must come from the same goroutine.
func (c *Comm) GroupStart() error {
	runtime.LockOSThread()
	var st C.hc_status
	C.hc_nccl_group(c.lib.t, nil, 0, &st)
	if err := statusError("ncclGroupStart", &st); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// GroupEnd closes the group GroupStart opened and launches its operations,
// with this Comm's device current. The goroutine is unlocked from its thread
// whether or not NCCL succeeds.
func (c *Comm) GroupEnd() error {
	defer runtime.UnlockOSThread()
	c.mu.Lock()
	ctx := c.ctx
	c.mu.Unlock()
	var st C.hc_status
	C.hc_nccl_group(c.lib.t, ctx, 1, &st)
	return statusError("ncclGroupEnd", &st)
}

// Group runs fn inside GroupStart/GroupEnd. fn's error wins over GroupEnd's;
// the group is closed either way.
func (c *Comm) Group(fn func() error) error {
	if err := c.GroupStart(); err != nil {
		return err
	}
	ferr := fn()
	eerr := c.GroupEnd()
	if ferr != nil {
		return ferr
	}
	return eerr
}

// AsyncError reports an error NCCL met while running this communicator's
// work (a peer that failed, a network error): nil while all is well. A rank
// that waits on NCCL work with a deadline polls it, and calls Abort on error.
func (c *Comm) AsyncError() error {
	const op = "ncclCommGetAsyncError"
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	var st C.hc_status
	C.hc_nccl_async_error(c.lib.t, c.comm, &st)
	return statusError(op, &st)
}

// Destroy waits for the communicator's work, frees it and releases the
// device's primary context. Calling it again does nothing.
func (c *Comm) Destroy() error { return c.close(false) }

// Abort frees the communicator without waiting for its work (after a peer
// failed or a deadline passed) and releases the context.
func (c *Comm) Abort() error { return c.close(true) }

func (c *Comm) close(abort bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return nil
	}
	call, flag := "ncclCommDestroy", C.int(0)
	if abort {
		call, flag = "ncclCommAbort", 1
	}
	var st C.hc_status
	C.hc_nccl_destroy(c.lib.t, c.comm, c.ctx, c.dev, flag, &st)
	c.comm, c.ctx = nil, nil
	liveComms.Add(-1)
	return statusError(call, &st)
}

// checkBuffers validates what NCCL would otherwise fail on less clearly.
func checkBuffers(op string, dt dtype.DType, count int64, bufs ...Ptr) (DataType, error) {
	t, err := TypeOf(dt)
	if err != nil {
		return 0, fmt.Errorf("nccl: %s: element type %v: %w", op, dt, hcerr.ErrInvalidArgument)
	}
	if count < 0 {
		return 0, fmt.Errorf("nccl: %s: count %d: %w", op, count, hcerr.ErrInvalidArgument)
	}
	if count > 0 {
		for _, b := range bufs {
			if b == 0 {
				return 0, fmt.Errorf("nccl: %s: null buffer for %d elements: %w", op, count, hcerr.ErrInvalidArgument)
			}
		}
	}
	return t, nil
}

// statusError turns what a trampoline reported into an error.
func statusError(call string, st *C.hc_status) error {
	if st.cuCall != nil {
		return &CUDAError{Lib: "nccl", Call: C.GoString(st.cuCall), Code: int(st.cu), Name: C.GoString(&st.cuName[0])}
	}
	if st.res != 0 {
		return &Error{Call: call, Code: Result(st.res), Text: C.GoString(&st.text[0]), Detail: C.GoString(&st.detail[0])}
	}
	return nil
}
