#!/usr/bin/env python3
"""Ad-hoc probe (sixth session): how long after a 32-bit word is written does a stream that waits on it
go on? One GPU, the CUDA driver alone (ctypes on libcuda), as hiercoll's backend drives it.

    python3 wait_latency.py [--iters 50]

Stream P ("producer") runs a ~200 us memset, records event e0, then writes the word (cuStreamWriteValue32).
Stream W ("waiter") was already waiting on the word (it reached the wait first, so the wait was not
  value-wait        W: cuStreamWaitValue32(word >= i)
  event-wait        W: cuStreamWaitEvent(e0) instead of a word
  hi-prio           W created at the highest priority (hiercoll's copy streams are)
Also: the gap a satisfied wait and a write add between two copies on one stream (copy, [ops], copy),
against the copies back to back. Median and p90 over --iters.
"""
import argparse
import ctypes
import os
import statistics

for _name, _off in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_name, _off)

cu = ctypes.CDLL("libcuda.so.1")
u64, sz, u32 = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_uint32


def ok(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    ok(cu.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
    ok(cu.cuCtxSetCurrent(ctx), "set")
    lo, hi = ctypes.c_int(), ctypes.c_int()
    ok(cu.cuCtxGetStreamPriorityRange(ctypes.byref(lo), ctypes.byref(hi)), "prio")

    def stream(prio):
        s = ctypes.c_void_p()
        ok(cu.cuStreamCreateWithPriority(ctypes.byref(s), 1, prio), "stream")
        return s

    big, word, a, b = u64(), u64(), u64(), u64()
    ok(cu.cuMemAlloc_v2(ctypes.byref(big), sz(1 << 30)), "alloc")
    ok(cu.cuMemAlloc_v2(ctypes.byref(word), sz(4096)), "alloc")
    ok(cu.cuMemAlloc_v2(ctypes.byref(a), sz(64 << 20)), "alloc")
    ok(cu.cuMemAlloc_v2(ctypes.byref(b), sz(64 << 20)), "alloc")
    ok(cu.cuMemsetD32_v2(word, 0, 1024), "memset")
    evs = [ctypes.c_void_p() for _ in range(8)]
    for e in evs:
        ok(cu.cuEventCreate(ctypes.byref(e), 0), "event")

    def el(x, y):
        ms = ctypes.c_float()
        ok(cu.cuEventElapsedTime(ctypes.byref(ms), x, y), "elapsed")
        return ms.value * 1000

    seq = [0]

    def memset(s, mib):
        ok(cu.cuMemsetD32Async(big, ctypes.c_uint(seq[0]), sz(mib * (1 << 20) // 4), s), "memsetAsync")

    def wake(kind, waiter_prio, waiter_first=True):
        P, W = stream(lo.value), stream(waiter_prio)
        out = []
        for _ in range(args.iters + 3):
            seq[0] += 1
            ok(cu.cuStreamSynchronize(P), "sync")
            ok(cu.cuStreamSynchronize(W), "sync")
            if not waiter_first:
                memset(W, 1000)  # W reaches its wait long after the word is written
            memset(P, 600)
            ok(cu.cuEventRecord(evs[0], P), "rec")
            ok(cu.cuStreamWriteValue32_v2(P, word, u32(seq[0]), 0), "write")
            if kind == "event":
                ok(cu.cuStreamWaitEvent(W, evs[0], 0), "waitEvent")
            else:
                flags = 0 | ((1 << 30) if kind == "flush" else 0)
                ok(cu.cuStreamWaitValue32_v2(W, word, u32(seq[0]), flags), "waitValue")
            ok(cu.cuEventRecord(evs[1], W), "rec")
            ok(cu.cuStreamSynchronize(W), "sync")
            out.append(el(evs[0], evs[1]))
        ok(cu.cuStreamDestroy_v2(P), "destroy")
        ok(cu.cuStreamDestroy_v2(W), "destroy")
        return out[3:]

    def gap(ops, prio):
        # copy, ops, copy on one stream: the second copy's end minus the first's, less one copy alone
        S = stream(prio)
        nb = sz(32 << 20)
        out = []
        for _ in range(args.iters + 3):
            seq[0] += 1
            ok(cu.cuStreamSynchronize(S), "sync")
            ok(cu.cuStreamWriteValue32_v2(S, word, u32(seq[0]), 0), "write")
            ok(cu.cuEventRecord(evs[2], S), "rec")
            ok(cu.cuMemcpyAsync(b, a, nb, S), "copy")
            ok(cu.cuEventRecord(evs[3], S), "rec")
            for op in ops:
                if op == "write":
                    ok(cu.cuStreamWriteValue32_v2(S, u64(word.value + 64), u32(seq[0]), 0), "write")
                elif op == "wait":
                    ok(cu.cuStreamWaitValue32_v2(S, word, u32(seq[0]), 0), "wait")
                elif op == "event":
                    ok(cu.cuEventRecord(evs[5], S), "rec")
            ok(cu.cuMemcpyAsync(a, b, nb, S), "copy")
            ok(cu.cuEventRecord(evs[4], S), "rec")
            ok(cu.cuStreamSynchronize(S), "sync")
            out.append(el(evs[3], evs[4]) - el(evs[2], evs[3]))
        ok(cu.cuStreamDestroy_v2(S), "destroy")
        return out[3:]

    def show(name, xs):
        xs = sorted(xs)
        print(f"{name:<44} median {statistics.median(xs):7.1f} us  p10 {xs[len(xs) // 10]:7.1f}  p90 {xs[9 * len(xs) // 10]:7.1f}", flush=True)

    print(f"priorities: least {lo.value}, greatest {hi.value}")
    show("wake: value-wait, waiter normal prio", wake("value", lo.value))
    show("wake: value-wait, waiter high prio", wake("value", hi.value))
    show("wake: event-wait, waiter high prio", wake("event", hi.value))
    show("gap: copy copy (extra time of the 2nd copy)", gap([], hi.value))
    show("gap: copy write copy", gap(["write"], hi.value))
    show("gap: copy write write copy", gap(["write", "write"], hi.value))
    show("gap: copy wait(satisfied) copy", gap(["wait"], hi.value))
    show("gap: copy write write wait wait wait copy", gap(["write", "write", "wait", "wait", "wait"], hi.value))
    show("gap: the same with 4 event records", gap(["write", "write", "event", "wait", "event", "wait", "event", "wait", "event"], hi.value))


if __name__ == "__main__":
    main()
