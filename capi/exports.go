package main

/*
#include "hiercoll.h"
typedef const void hc_const_void;
typedef const char hc_const_char;
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// result turns err into a return code, recording its message for the
// calling thread.
func result(err error) C.int {
	if err == nil {
		return codeOK
	}
	setLastError(err.Error())
	return C.int(codeOf(err))
}

// guard turns a panic into HC_ERR_OTHER: a panic must not unwind into C.
// Every exported function defers it.
func guard(rc *C.int) {
	if p := recover(); p != nil {
		setLastError(fmt.Sprintf("hiercoll: internal error: %v\n%s", p, debug.Stack()))
		*rc = codeOther
	}
}

func nilArg(name string) C.int {
	return result(fmt.Errorf("hiercoll: %s must not be NULL: %w", name, device.ErrInvalidArgument))
}

//export hc_abi_version
func hc_abi_version() C.int { return abiVersion }

//export hc_last_error
func hc_last_error(buf *C.char, n C.int) (rc C.int) {
	defer guard(&rc)
	msg := lastError()
	if buf != nil && n > 0 {
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		k := copy(dst[:n-1], msg)
		dst[k] = 0
	}
	return C.int(min(len(msg), 1<<30))
}

//export hc_init_from_env
func hc_init_from_env(world *C.int64_t) (rc C.int) {
	defer guard(&rc)
	if world == nil {
		return nilArg("world")
	}
	h, err := initFromEnv()
	if err == nil {
		*world = C.int64_t(h)
	}
	return result(err)
}

//export hc_init_sim
func hc_init_sim(nodes, gpusPerNode C.int, worldsOut *C.int64_t) (rc C.int) {
	defer guard(&rc)
	if worldsOut == nil {
		return nilArg("worlds_out")
	}
	hs, err := initSim(int(nodes), int(gpusPerNode))
	if err == nil {
		out := unsafe.Slice((*C.int64_t)(worldsOut), len(hs))
		for i, h := range hs {
			out[i] = C.int64_t(h)
		}
	}
	return result(err)
}

//export hc_world_info
func hc_world_info(world C.int64_t, rank, size, localRank, localSize *C.int) (rc C.int) {
	defer guard(&rc)
	info, err := rankInfo(int64(world))
	if err != nil {
		return result(err)
	}
	for _, o := range []struct {
		p *C.int
		v int
	}{{rank, info.Rank}, {size, info.Size}, {localRank, info.LocalRank}, {localSize, info.LocalSize}} {
		if o.p != nil {
			*o.p = C.int(o.v)
		}
	}
	return codeOK
}

//export hc_world_device
func hc_world_device(world C.int64_t, backend, ordinal *C.int) (rc C.int) {
	defer guard(&rc)
	info, err := rankInfo(int64(world))
	if err != nil {
		return result(err)
	}
	if backend != nil {
		*backend = C.int(info.Backend)
	}
	if ordinal != nil {
		*ordinal = C.int(info.Ordinal)
	}
	return codeOK
}

//export hc_world_close
func hc_world_close(world C.int64_t) (rc C.int) {
	defer guard(&rc)
	return result(closeWorld(int64(world)))
}

//export hc_rs2d_create
func hc_rs2d_create(world C.int64_t, maxM, n C.int64_t, dt, overlap, reductionSMs C.int, ctx *C.int64_t) (rc C.int) {
	defer guard(&rc)
	if ctx == nil {
		return nilArg("ctx")
	}
	h, err := createRS2D(int64(world), int64(maxM), int64(n), int(dt), int(overlap), int(reductionSMs))
	if err == nil {
		*ctx = C.int64_t(h)
	}
	return result(err)
}

//export hc_rs2d_destroy
func hc_rs2d_destroy(ctx C.int64_t) (rc C.int) {
	defer guard(&rc)
	return result(destroyRS2D(int64(ctx)))
}

//export hc_rs2d_reduce_scatter
func hc_rs2d_reduce_scatter(ctx C.int64_t, inPtr C.uint64_t, m C.int64_t, outPtr C.uint64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(reduceScatter(int64(ctx), uint64(inPtr), int64(m), uint64(outPtr), uint64(stream)))
}

//export hc_rs2d_input
func hc_rs2d_input(ctx C.int64_t, ptr *C.uint64_t) (rc C.int) {
	defer guard(&rc)
	if ptr == nil {
		return nilArg("ptr")
	}
	p, err := symmetricInput(int64(ctx))
	if err == nil {
		*ptr = C.uint64_t(p)
	}
	return result(err)
}

//export hc_rs2d_register
func hc_rs2d_register(ctx C.int64_t, ptr C.uint64_t, bytes C.int64_t) (rc C.int) {
	defer guard(&rc)
	return result(registerInput(int64(ctx), uint64(ptr), int64(bytes)))
}

//export hc_rs2d_deregister
func hc_rs2d_deregister(ctx C.int64_t, ptr C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(deregisterInput(int64(ctx), uint64(ptr)))
}

//export hc_rs2d_signal_value
func hc_rs2d_signal_value(ctx C.int64_t, value *C.uint32_t) (rc C.int) {
	defer guard(&rc)
	if value == nil {
		return nilArg("value")
	}
	v, err := signalValue(int64(ctx))
	if err == nil {
		*value = C.uint32_t(v)
	}
	return result(err)
}

//export hc_rs2d_signal_addr
func hc_rs2d_signal_addr(ctx C.int64_t, dest C.int, addr *C.uint64_t) (rc C.int) {
	defer guard(&rc)
	if addr == nil {
		return nilArg("addr")
	}
	a, err := signalAddr(int64(ctx), int(dest))
	if err == nil {
		*addr = C.uint64_t(a)
	}
	return result(err)
}

//export hc_rs2d_raise_signal
func hc_rs2d_raise_signal(ctx C.int64_t, dest C.int, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(raiseSignal(int64(ctx), int(dest), uint64(stream)))
}

//export hc_rs2d_early_rows
func hc_rs2d_early_rows(ctx C.int64_t, m C.int64_t, rows *C.int64_t) (rc C.int) {
	defer guard(&rc)
	if rows == nil {
		return nilArg("rows")
	}
	r, err := earlyRows(int64(ctx), int64(m))
	if err == nil {
		*rows = C.int64_t(r)
	}
	return result(err)
}

//export hc_rs2d_raise_early
func hc_rs2d_raise_early(ctx C.int64_t, dest C.int, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(raiseEarly(int64(ctx), int(dest), uint64(stream)))
}

//export hc_rs2d_early_signal_addr
func hc_rs2d_early_signal_addr(ctx C.int64_t, dest C.int, addr *C.uint64_t) (rc C.int) {
	defer guard(&rc)
	if addr == nil {
		return nilArg("addr")
	}
	a, err := earlySignalAddr(int64(ctx), int(dest))
	if err == nil {
		*addr = C.uint64_t(a)
	}
	return result(err)
}

//export hc_rs2d_skip_call
func hc_rs2d_skip_call(ctx C.int64_t) (rc C.int) {
	defer guard(&rc)
	return result(skipCall(int64(ctx)))
}

//export hc_rs2d_consumption_order
func hc_rs2d_consumption_order(ctx C.int64_t, order *C.int, n C.int) (rc C.int) {
	defer guard(&rc)
	if order == nil && n > 0 {
		return nilArg("order")
	}
	var dst []int32
	if n > 0 {
		dst = unsafe.Slice((*int32)(unsafe.Pointer(order)), int(n))
	}
	return result(consumptionOrder(int64(ctx), dst))
}

//export hc_rs2d_matmul_reduce_scatter
func hc_rs2d_matmul_reduce_scatter(ctx C.int64_t, a C.uint64_t, lda C.int64_t, b C.uint64_t, ldb C.int64_t, bLayout C.int,
	m, k C.int64_t, c C.uint64_t, out C.uint64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	x := matmulArgs{a: uint64(a), b: uint64(b), c: uint64(c), out: uint64(out), lda: int64(lda), ldb: int64(ldb),
		m: int64(m), k: int64(k), layout: int(bLayout)}
	return result(matmulReduceScatter(int64(ctx), x, uint64(stream)))
}

//export hc_rs2d_scaled_matmul_reduce_scatter
func hc_rs2d_scaled_matmul_reduce_scatter(ctx C.int64_t, a C.uint64_t, lda C.int64_t, b C.uint64_t, ldb C.int64_t,
	scaleA, scaleB C.uint64_t, m, k C.int64_t, c C.uint64_t, out C.uint64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	x := matmulArgs{a: uint64(a), b: uint64(b), c: uint64(c), out: uint64(out), lda: int64(lda), ldb: int64(ldb),
		m: int64(m), k: int64(k), layout: layoutNK, in: dtype.E4M3, scaleA: uint64(scaleA), scaleB: uint64(scaleB)}
	return result(matmulReduceScatter(int64(ctx), x, uint64(stream)))
}

//export hc_rs2d_scaled_matmul_reduce_scatter_ex
func hc_rs2d_scaled_matmul_reduce_scatter_ex(ctx C.int64_t, a C.uint64_t, lda C.int64_t, b C.uint64_t, ldb C.int64_t,
	scaling C.int, scaleA, scaleB C.uint64_t, m, k C.int64_t, c C.uint64_t, out C.uint64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	x := matmulArgs{a: uint64(a), b: uint64(b), c: uint64(c), out: uint64(out), lda: int64(lda), ldb: int64(ldb),
		m: int64(m), k: int64(k), layout: layoutNK, in: dtype.E4M3, scaling: int(scaling), scaleA: uint64(scaleA),
		scaleB: uint64(scaleB)}
	return result(matmulReduceScatter(int64(ctx), x, uint64(stream)))
}

//export hc_gemm_workspace_bytes
func hc_gemm_workspace_bytes(world C.int64_t, bytes *C.int64_t) (rc C.int) {
	defer guard(&rc)
	if bytes == nil {
		return nilArg("bytes")
	}
	n, err := gemmWorkspaceBytes(int64(world))
	if err == nil {
		*bytes = C.int64_t(n)
	}
	return result(err)
}

//export hc_gemm
func hc_gemm(world C.int64_t, aType C.int, a C.uint64_t, lda C.int64_t, b C.uint64_t, ldb C.int64_t, bLayout C.int,
	scaleA, scaleB C.uint64_t, cType C.int, c C.uint64_t, ldc C.int64_t, m, n, k C.int64_t, workspace C.uint64_t,
	stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	x := gemmArgs{in: int(aType), out: int(cType), layout: int(bLayout), a: uint64(a), b: uint64(b), c: uint64(c),
		scaleA: uint64(scaleA), scaleB: uint64(scaleB), workspace: uint64(workspace),
		lda: int64(lda), ldb: int64(ldb), ldc: int64(ldc), m: int64(m), n: int64(n), k: int64(k)}
	return result(gemm(int64(world), x, uint64(stream)))
}

//export hc_gemm_ex
func hc_gemm_ex(world C.int64_t, aType C.int, a C.uint64_t, lda C.int64_t, b C.uint64_t, ldb C.int64_t, bLayout C.int,
	scaling C.int, scaleA, scaleB C.uint64_t, cType C.int, c C.uint64_t, ldc C.int64_t, m, n, k C.int64_t,
	workspace C.uint64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	x := gemmArgs{in: int(aType), out: int(cType), layout: int(bLayout), scaling: int(scaling), a: uint64(a), b: uint64(b),
		c: uint64(c), scaleA: uint64(scaleA), scaleB: uint64(scaleB), workspace: uint64(workspace),
		lda: int64(lda), ldb: int64(ldb), ldc: int64(ldc), m: int64(m), n: int64(n), k: int64(k)}
	return result(gemm(int64(world), x, uint64(stream)))
}

//export hc_stream_create
func hc_stream_create(world C.int64_t, stream *C.uint64_t) (rc C.int) {
	defer guard(&rc)
	if stream == nil {
		return nilArg("stream")
	}
	s, err := createStream(int64(world))
	if err == nil {
		*stream = C.uint64_t(s)
	}
	return result(err)
}

//export hc_stream_synchronize
func hc_stream_synchronize(world C.int64_t, stream C.uint64_t, timeoutMS C.int64_t) (rc C.int) {
	defer guard(&rc)
	return result(synchronizeStream(int64(world), uint64(stream), int64(timeoutMS)))
}

//export hc_stream_destroy
func hc_stream_destroy(world C.int64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(destroyStream(int64(world), uint64(stream)))
}

//export hc_sim_alloc
func hc_sim_alloc(world C.int64_t, size C.int64_t, ptr *C.uint64_t) (rc C.int) {
	defer guard(&rc)
	if ptr == nil {
		return nilArg("ptr")
	}
	p, err := allocMem(int64(world), int64(size))
	if err == nil {
		*ptr = C.uint64_t(p)
	}
	return result(err)
}

//export hc_sim_free
func hc_sim_free(world C.int64_t, ptr C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(freeMem(int64(world), uint64(ptr)))
}

// hostBytes views size bytes of C memory at p (nil for size 0).
func hostBytes(p unsafe.Pointer, size int64, name string) ([]byte, error) {
	switch {
	case size < 0:
		return nil, fmt.Errorf("hiercoll: copy of %d bytes: %w", size, device.ErrInvalidArgument)
	case size == 0:
		return nil, nil
	case p == nil:
		return nil, fmt.Errorf("hiercoll: %s must not be NULL: %w", name, device.ErrInvalidArgument)
	}
	return unsafe.Slice((*byte)(p), size), nil
}

//export hc_sim_copy_to_device
func hc_sim_copy_to_device(world C.int64_t, dst C.uint64_t, src *C.hc_const_void, size C.int64_t) (rc C.int) {
	defer guard(&rc)
	b, err := hostBytes(unsafe.Pointer(src), int64(size), "src")
	if err != nil || len(b) == 0 {
		return result(err)
	}
	return result(copyToDevice(int64(world), uint64(dst), b))
}

//export hc_sim_copy_to_host
func hc_sim_copy_to_host(world C.int64_t, dst unsafe.Pointer, src C.uint64_t, size C.int64_t) (rc C.int) {
	defer guard(&rc)
	b, err := hostBytes(dst, int64(size), "dst")
	if err != nil || len(b) == 0 {
		return result(err)
	}
	return result(copyToHost(int64(world), b, uint64(src)))
}

//export hc_init_store
func hc_init_store(set C.hc_store_set_fn, get C.hc_store_get_fn, user unsafe.Pointer, prefix, host *C.hc_const_char, world *C.int64_t) (rc C.int) {
	defer guard(&rc)
	switch {
	case world == nil:
		return nilArg("world")
	case set == nil || get == nil:
		return nilArg("set and get")
	case prefix == nil:
		return nilArg("prefix")
	}
	h := ""
	if host != nil {
		h = C.GoString((*C.char)(host))
	}
	handle, err := initFromStore(cStore{set: set, get: get, user: user}, C.GoString((*C.char)(prefix)), h)
	if err == nil {
		*world = C.int64_t(handle)
	}
	return result(err)
}

//export hc_rs2d_clear_signals
func hc_rs2d_clear_signals(ctx C.int64_t, stream C.uint64_t) (rc C.int) {
	defer guard(&rc)
	return result(clearSignals(int64(ctx), uint64(stream)))
}
