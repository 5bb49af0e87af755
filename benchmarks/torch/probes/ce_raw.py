#!/usr/bin/env python3
"""Ad-hoc probe (fifth session): copy-engine pushes to rank+1, +2, +3 in turn, driven through the CUDA
driver alone (ctypes on libcuda, no torch, no runtime), the way hiercoll's CUDA backend drives it:
the GPU's primary context, cuMemAlloc'd buffers shared with cuIpcGetMemHandle / cuIpcOpenMemHandle_v2
(lazy peer access), non-blocking streams, cuMemcpyAsync, events for time.

    python3 ce_raw.py [--world 4] [--bytes 33554432] [--iters 10] [--reps 3] [--torch-init]

Per rank, one iteration moves world-1 blocks of --bytes: the block for rank+s into rank+s's receive
buffer (slot rank), s = 1..world-1 in turn on one stream (as hiercoll's floors "in turn" and torch's
ce_probe "push alone, 1 copy stream"). Cases:
  in-turn         t0, then the host enqueues the iterations, then t1 (floors' way of timing)
  in-turn-queued  as in-turn, but the stream first runs ~1 ms of local memsets, so every copy is
                  queued before the first starts (host enqueue time cannot show)
  same-peer       world-1 copies to rank+1 (control)
  in-turn-chunked each copy as 4 copies of a quarter
  in-turn-evented an event recorded after each copy
  in-turn-joined  each iteration ends with a hop to a second stream and back through events (as torch's
                  ce_probe does between its iterations)
  timeline        --iters iterations back to back, an event after each copy: each copy's duration
  per-copy        one iteration, an event after each copy: when each copy ended (us from t0)
Printed: the slowest rank's mean per iteration, best of --reps.
--torch-init: import torch and initialise CUDA and an NCCL group first (what a torch process has).
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import sys
import time

for _name, _off in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_name, _off)
    if os.environ[_name] != _off:
        raise SystemExit(f"{_name} would allow multicast")


class Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


def CASES(in_turn, in_turn_queued, same_peer, chunked, evented, joined):
    return (("in-turn", in_turn, False), ("in-turn-queued", in_turn_queued, True),
            ("same-peer", same_peer, False), ("same-peer-queued", same_peer, True),
            ("in-turn-chunked", chunked, False), ("in-turn-evented", evented, False),
            ("in-turn-joined", joined, False))


NAMES = [c[0] for c in CASES(*[None] * 6)]


def worker(rank, world, args, bar, handles, results):
    if args.torch_init:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", RANK=str(rank), WORLD_SIZE=str(world))
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl")
        t = torch.ones(1, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
    cu = ctypes.CDLL("libcuda.so.1")
    u64, sz = ctypes.c_uint64, ctypes.c_size_t

    def ok(r, what):
        if r != 0:
            raise RuntimeError(f"rank {rank}: {what}: CUresult {r}")

    ok(cu.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    ok(cu.cuDeviceGet(ctypes.byref(dev), rank), "cuDeviceGet")
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    nb = args.bytes
    src, recv, pad = u64(), u64(), u64()
    ok(cu.cuMemAlloc_v2(ctypes.byref(src), sz(4 * nb)), "cuMemAlloc src")
    ok(cu.cuMemAlloc_v2(ctypes.byref(recv), sz(world * nb)), "cuMemAlloc recv")
    ok(cu.cuMemAlloc_v2(ctypes.byref(pad), sz(1 << 30)), "cuMemAlloc pad")
    h = Handle()
    ok(cu.cuIpcGetMemHandle(ctypes.byref(h), recv), "cuIpcGetMemHandle")
    handles[rank] = bytes(bytearray(h))
    bar.wait()
    peer = {}
    for p in range(world):
        if p != rank:
            ptr = u64()
            ok(cu.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), Handle.from_buffer_copy(handles[p]), 1), "cuIpcOpenMemHandle_v2")
            peer[p] = ptr.value
    st, st2 = ctypes.c_void_p(), ctypes.c_void_p()
    lo, hi = ctypes.c_int(), ctypes.c_int()
    ok(cu.cuCtxGetStreamPriorityRange(ctypes.byref(lo), ctypes.byref(hi)), "priority range")
    ok(cu.cuStreamCreateWithPriority(ctypes.byref(st), 1, lo), "cuStreamCreateWithPriority")
    ok(cu.cuStreamCreateWithPriority(ctypes.byref(st2), 1, lo), "cuStreamCreateWithPriority")
    evs = []
    for _ in range(8 + 4 * args.iters):
        e = ctypes.c_void_p()
        ok(cu.cuEventCreate(ctypes.byref(e), 0), "cuEventCreate")
        evs.append(e)

    def copy(dst, s_off, chunks=1):
        c = nb // chunks
        for j in range(chunks):
            ok(cu.cuMemcpyAsync(u64(dst + j * c), u64(src.value + s_off + j * c), sz(c), st), "cuMemcpyAsync")

    def in_turn():
        for s in range(1, world):
            copy(peer[(rank + s) % world] + rank * nb, (s - 1) * nb)

    def in_turn_chunked():
        for s in range(1, world):
            copy(peer[(rank + s) % world] + rank * nb, (s - 1) * nb, 4)

    def in_turn_evented():
        for s in range(1, world):
            copy(peer[(rank + s) % world] + rank * nb, (s - 1) * nb)
            ok(cu.cuEventRecord(evs[2], st), "record")

    def in_turn_joined():
        # torch's iteration boundary: st -> st2 -> st through events
        in_turn()
        ok(cu.cuEventRecord(evs[3], st), "record")
        ok(cu.cuStreamWaitEvent(st2, evs[3], 0), "wait")
        ok(cu.cuEventRecord(evs[4], st2), "record")
        ok(cu.cuStreamWaitEvent(st, evs[4], 0), "wait")

    def same_peer():
        for s in range(1, world):
            copy(peer[(rank + 1) % world] + rank * nb, (s - 1) * nb)

    def elapsed(a, b):
        ms = ctypes.c_float()
        ok(cu.cuEventElapsedTime(ctypes.byref(ms), a, b), "cuEventElapsedTime")
        return ms.value * 1000

    def timed(fn, queued):
        if queued:
            for _ in range(4):
                ok(cu.cuMemsetD32Async(pad, ctypes.c_uint(0), sz((1 << 30) // 4), st), "cuMemsetD32Async")
        ok(cu.cuEventRecord(evs[0], st), "record")
        t_host = time.perf_counter()
        for _ in range(args.iters):
            fn()
        host_us = (time.perf_counter() - t_host) * 1e6 / args.iters
        ok(cu.cuEventRecord(evs[1], st), "record")
        ok(cu.cuStreamSynchronize(st), "sync")
        return elapsed(evs[0], evs[1]) / args.iters, host_us

    def per_copy():
        ok(cu.cuEventRecord(evs[0], st), "record")
        for s in range(1, world):
            copy(peer[(rank + s) % world] + rank * nb, (s - 1) * nb)
            ok(cu.cuEventRecord(evs[s], st), "record")
        ok(cu.cuStreamSynchronize(st), "sync")
        return [elapsed(evs[0], evs[s]) for s in range(1, world)]

    def timeline():
        # iters back to back, an event after each copy: each copy's duration (us)
        ok(cu.cuEventRecord(evs[0], st), "record")
        k = 8
        for _ in range(args.iters):
            for s in range(1, world):
                copy(peer[(rank + s) % world] + rank * nb, (s - 1) * nb)
                ok(cu.cuEventRecord(evs[k], st), "record")
                k += 1
        ok(cu.cuStreamSynchronize(st), "sync")
        ends = [elapsed(evs[0], evs[j]) for j in range(8, k)]
        return [b - a for a, b in zip([0.0] + ends, ends)]

    out = {}
    for name, fn, queued in CASES(in_turn, in_turn, same_peer, in_turn_chunked, in_turn_evented, in_turn_joined):
        timed(fn, queued)  # warm-up
        best = None
        for _ in range(args.reps):
            bar.wait()
            got = timed(fn, queued)
            if best is None or got[0] < best[0]:
                best = got
        out[name] = best
    lines = []
    for _ in range(3):
        bar.wait()
        lines.append(per_copy())
    out["per-copy"] = lines
    bar.wait()
    timeline()
    bar.wait()
    out["timeline"] = timeline()
    results[rank] = out
    bar.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--bytes", type=int, default=32 << 20)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--torch-init", action="store_true")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    man = ctx.Manager()
    handles, results = man.dict(), man.dict()
    bar = ctx.Barrier(args.world, timeout=120)
    procs = [ctx.Process(target=worker, args=(r, args.world, args, bar, handles, results)) for r in range(args.world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    if any(p.exitcode != 0 for p in procs):
        sys.exit(f"ce_raw: a worker failed: {[p.exitcode for p in procs]}")
    tag = "torch-init" if args.torch_init else "driver-only"
    mib = args.bytes / 2**20
    for name in NAMES:
        dev_us = max(results[r][name][0] for r in range(args.world))
        host_us = max(results[r][name][1] for r in range(args.world))
        print(f"ce_raw {tag:<11} {name:<18} {args.world - 1} x {mib:.0f} MiB  {dev_us:7.1f} us per iteration "
              f"(slowest rank; host enqueue {host_us:.1f} us per iteration)", flush=True)
    for r in range(args.world):
        for i, ends in enumerate(results[r]["per-copy"]):
            print(f"ce_raw {tag:<11} per-copy rank {r} try {i}: copies to rank+1..+{args.world - 1} end at "
                  + " ".join(f"{x:.1f}" for x in ends) + " us", flush=True)
    for r in range(args.world):
        print(f"ce_raw {tag:<11} timeline rank {r}: each copy's time, {args.iters} iterations back to back: "
              + " ".join(f"{x:.0f}" for x in results[r]["timeline"]) + " us", flush=True)


if __name__ == "__main__":
    main()
