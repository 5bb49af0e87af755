#!/usr/bin/env python3
"""Ad-hoc probe (fourth session; sixth session: kind "pull-last"): the overlapped path's pipeline,
rebuilt in torch, to see how fast copy engines can carry the GEMM's row blocks when each copy may
start only after its block, and which way of issuing them is fastest.

pull-last (sixth session): the blocks of the first world-2 steps are pushed as in "push"; the last
peer block is instead pulled by its receiver on a second copy stream: the sender's GEMM stream writes
a word into the receiver's pad right after the block (cuStreamWriteValue32 on the peer's symmetric
memory), the receiver's second copy stream waits for it (cuStreamWaitValue32) and copies the rows
from the sender's C. The question: does the pull, running beside the push chain, land the last block
sooner than a push queued behind the others?

    torchrun --nproc-per-node 4 ce_pipeline.py [--shapes 8192x8192x8192,...]

Per rank, the GEMM computes the world row blocks of C in the overlapped path's order (rank+1,
rank+2, ..., own last) on one stream, an event after each. Each peer block then moves:
  push      the sender's copy stream waits for its block's event and copies it into the peer
  pull      the receiver's copy stream waits for its own block of the same step (the ranks run
            in step, started by a barrier, so that is when the peer's block is done; the data may
            be early, this only times the engines) and copies the peer's rows of it
  split     half of each block pushed, half pulled, on two streams
  push2     push, alternating between two copy streams
Printed: when each GEMM block ended and each copy landed (ms from the start; the slowest rank).
"""

import os

for _name, _off in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_name, _off)
    if os.environ[_name] != _off:
        raise SystemExit(f"{_name} would allow multicast")

import argparse  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed import _symmetric_memory as symm_mem  # noqa: E402


class _Raw:
    """A byte range of device memory by address, copied with cuMemcpyAsync (the ipcraw mode)."""

    cu = None

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes

    def copy_(self, src):
        import ctypes
        if _Raw.cu is None:
            _Raw.cu = ctypes.CDLL("libcuda.so.1")
        sp = src.ptr if isinstance(src, _Raw) else src.data_ptr()
        st = torch.cuda.current_stream().cuda_stream
        r = _Raw.cu.cuMemcpyAsync(ctypes.c_uint64(self.ptr), ctypes.c_uint64(sp), ctypes.c_size_t(self.nbytes), ctypes.c_void_p(st))
        assert r == 0, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x8192,8192x8192x28672")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--mem", default="symm", help="symm: torch symmetric memory; symmraw: the same, copied with cuMemcpyAsync; "
                    "ipcraw: torch.empty allocations mapped with cuIpcOpenMemHandle, cuMemcpyAsync (push kinds only); ipc: cudaMalloc'd tensors opened by "
                    "the peers with cudaIpcOpenMemHandle (how hiercoll's heap is mapped)")
    ap.add_argument("--kinds", default="push,pull,split,push2,pull-last")
    ap.add_argument("--sync", default="event", help="how a copy waits for its block: event (cuStreamWaitEvent), "
                    "value (cuStreamWriteValue32 after the block, cuStreamWaitValue32 before the copy, as hiercoll), "
                    "value-nobarrier (the write with CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER); "
                    "a +arrival suffix also writes a word in the destination after each copy (as hiercoll)")
    ap.add_argument("--reduce", action="store_true", help="with +arrival: a high-priority reduction stream waits (cuStreamWaitValue32) "
                    "for the peers' arrival words from the call's start, then sums the four blocks (as hiercoll)")
    ap.add_argument("--blas", default="", help="torch.backends.cuda.preferred_blas_library (cublas, cublaslt)")
    ap.add_argument("--dst-offsets", default="0", help="ipcraw: byte offsets added to the copies' destinations (alignment)")
    args = ap.parse_args()
    if args.blas:
        torch.backends.cuda.preferred_blas_library(args.blas)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dev = torch.device("cuda")
    gname = dist.group.WORLD.group_name
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        kl, rows = k // world, m // world
        a = torch.randn(m, kl, device=dev, dtype=torch.bfloat16)
        b = torch.randn(kl, n, device=dev, dtype=torch.bfloat16)
        if args.mem in ("symm", "symmraw"):
            c = symm_mem.empty(m, n, device=dev, dtype=torch.bfloat16)
            recv = symm_mem.empty(m, n, device=dev, dtype=torch.bfloat16)
            hc = symm_mem.rendezvous(c, gname)
            hr = symm_mem.rendezvous(recv, gname)
            peer_c = [hc.get_buffer(p, (m, n), torch.bfloat16) for p in range(world)]
            peer_r = [hr.get_buffer(p, (m, n), torch.bfloat16) for p in range(world)]
            if args.mem == "symmraw":  # the same memory, copied with cuMemcpyAsync (push only)
                peer_c, peer_r = [t.data_ptr() for t in peer_c], [t.data_ptr() for t in peer_r]
        elif args.mem == "ipcraw":
            # As hiercoll maps its heap: cuIpcGetMemHandle of the allocation, opened by each peer
            # in its own context with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS; copies are cuMemcpyAsync.
            import ctypes
            cu = ctypes.CDLL("libcuda.so.1")
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            recv = torch.empty(m + 64, n, device=dev, dtype=torch.bfloat16)  # room for --dst-offsets
            hc = hr = None

            def opened(t):
                base, size = ctypes.c_uint64(), ctypes.c_size_t()
                assert cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr())) == 0
                class Handle(ctypes.Structure):  # CUipcMemHandle, passed by value to the open
                    _fields_ = [("reserved", ctypes.c_char * 64)]

                h = Handle()
                assert cu.cuIpcGetMemHandle(ctypes.byref(h), base) == 0
                got = [None] * world
                dist.all_gather_object(got, (bytes(bytearray(h)), t.data_ptr() - base.value))
                ptrs = []
                for p, (hb, off) in enumerate(got):
                    if p == rank:
                        ptrs.append(t.data_ptr())
                        continue
                    ptr = ctypes.c_uint64()
                    assert cu.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), Handle.from_buffer_copy(hb), 1) == 0
                    ptrs.append(ptr.value + off)
                return ptrs

            peer_c, peer_r = opened(c), opened(recv)
            torch.cuda.synchronize()
        else:
            from torch.multiprocessing.reductions import reduce_tensor
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            recv = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            hc = hr = None

            def opened(t):
                fn, fargs = reduce_tensor(t)
                got = [None] * world
                dist.all_gather_object(got, (fn, fargs))
                return [t if p == rank else f(*a) for p, (f, a) in enumerate(got)]

            peer_c, peer_r = opened(c), opened(recv)
            torch.cuda.synchronize()
        import ctypes
        cu = ctypes.CDLL("libcuda.so.1")
        words = torch.zeros(64, device=dev, dtype=torch.int32)
        hw = symm_mem.empty(64, device=dev, dtype=torch.int32)
        hw.zero_()
        hwh = symm_mem.rendezvous(hw, gname)
        peer_words = [hwh.get_buffer(p, (64,), torch.int32).data_ptr() for p in range(world)]
        epoch = [0]
        sync_kind, arrival = args.sync.split("+")[0], args.sync.endswith("+arrival")

        def write_value(stream, addr, v, flags=0):
            r = cu.cuStreamWriteValue32_v2(ctypes.c_void_p(stream.cuda_stream), ctypes.c_uint64(addr), ctypes.c_uint32(v), ctypes.c_uint(flags))
            assert r == 0, r

        def wait_value(stream, addr, v):
            r = cu.cuStreamWaitValue32_v2(ctypes.c_void_p(stream.cuda_stream), ctypes.c_uint64(addr), ctypes.c_uint32(v), ctypes.c_uint(0))
            assert r == 0, r

        rs = torch.cuda.Stream(priority=-5)
        out = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)
        gs = torch.cuda.Stream()
        cs = [torch.cuda.Stream() for _ in range(2)]
        main_s = torch.cuda.current_stream()
        order = [(rank + s) % world for s in range(1, world)] + [rank]

        row_bytes = n * 2

        def rows_of(t, d, lo=0.0, hi=1.0):
            r0 = d * rows
            if isinstance(t, int):  # a raw pointer (ipcraw)
                return _Raw(t + (r0 + int(lo * rows)) * row_bytes, (int(hi * rows) - int(lo * rows)) * row_bytes)
            return t[r0 + int(lo * rows):r0 + int(hi * rows)]

        def ev():
            return torch.cuda.Event(enable_timing=True)

        def call(kind):
            t0 = ev()
            t0.record(main_s)
            gs.wait_stream(main_s)
            for st in cs:
                st.wait_stream(main_s)
            gemm_end, copy_end = [], []
            epoch[0] += 1
            if args.reduce:
                rs.wait_stream(main_s)
                for p in range(world):
                    if p != rank:
                        wait_value(rs, hw.data_ptr() + 4 * p, epoch[0])
            for i, d in enumerate(order):
                with torch.cuda.stream(gs):
                    torch.mm(rows_of(a, d), b, out=rows_of(c, d))
                e = ev()
                e.record(gs)
                word = words.data_ptr() + 4 * i
                if sync_kind != "event":
                    write_value(gs, word, epoch[0], 1 if sync_kind == "value-nobarrier" else 0)
                gemm_end.append(e)
                if d == rank:
                    continue
                src = (rank - (i + 1)) % world  # whose block for me is done at this step
                jobs = []
                if kind == "pull-last" and i == world - 2:
                    # the sender announces the block to its receiver d; this rank pulls its own block
                    # of this step from src on the second copy stream
                    write_value(gs, peer_words[d] + 4 * (32 + rank), epoch[0])
                    st = cs[1]
                    wait_value(st, hw.data_ptr() + 4 * (32 + src), epoch[0])
                    with torch.cuda.stream(st):
                        rows_of(recv, src).copy_(rows_of(peer_c[src], rank))
                    x = ev()
                    x.record(st)
                    copy_end.append([x])
                    continue
                if kind in ("push", "push2", "pull-last"):
                    st = cs[i % 2] if kind == "push2" else cs[0]
                    jobs.append((st, lambda: rows_of(peer_r[d], rank).copy_(rows_of(c, d))))
                elif kind == "pull":
                    jobs.append((cs[0], lambda: rows_of(recv, src).copy_(rows_of(peer_c[src], rank))))
                elif kind == "split":
                    jobs.append((cs[0], lambda: rows_of(peer_r[d], rank, 0, 0.5).copy_(rows_of(c, d, 0, 0.5))))
                    jobs.append((cs[1], lambda: rows_of(recv, src, 0.5, 1).copy_(rows_of(peer_c[src], rank, 0.5, 1))))
                ends = []
                for st, job in jobs:
                    if sync_kind == "event":
                        st.wait_event(e)
                    else:
                        wait_value(st, word, epoch[0])
                    with torch.cuda.stream(st):
                        job()
                    if arrival:
                        write_value(st, peer_words[d] + 4 * rank, epoch[0])
                    x = ev()
                    x.record(st)
                    ends.append(x)
                copy_end.append(ends)
            if args.reduce:
                rs.wait_stream(gs)
                with torch.cuda.stream(rs):
                    torch.sum(recv[:m].view(world, rows, n), dim=0, out=out)
                main_s.wait_stream(rs)
            main_s.wait_stream(gs)
            for st in cs:
                main_s.wait_stream(st)
            t1 = ev()
            t1.record(main_s)
            return t0, gemm_end, copy_end, t1

        variants = [(kind, 0) for kind in args.kinds.split(",")]
        if args.mem == "ipcraw":
            variants = [(kind, int(o)) for o in args.dst_offsets.split(",") for kind in args.kinds.split(",")]
            base_r = list(peer_r)
        for kind, off in variants:
            if args.mem == "ipcraw":
                peer_r = [p + off for p in base_r]
            call(kind)
            torch.cuda.synchronize()
            dist.barrier()
            torch.cuda.synchronize()
            runs = [call(kind) for _ in range(args.iters)]
            torch.cuda.synchronize()
            t0, ge, ce, t1 = runs[-1]
            g = [t0.elapsed_time(e) for e in ge]
            cl = [max(t0.elapsed_time(x) for x in ends) for ends in ce]
            vals = torch.tensor(g + cl + [t0.elapsed_time(t1)], device=dev)
            dist.all_reduce(vals, op=dist.ReduceOp.MAX)
            vals = vals.tolist()
            g, cl, total = vals[:len(g)], vals[len(g):-1], vals[-1]
            if rank == 0:
                print(f"{shape} {args.mem:<4} {'reduce' if args.reduce else '':<6} {args.blas or 'blas-default':<12} {args.sync:<22} {kind:<6} dst+{off:<6} gemm blocks end " + " ".join(f"{x:.3f}" for x in g) +
                      " | copies land " + " ".join(f"{x:.3f}" for x in cl) + f" | call {total:.3f} ms", flush=True)
        del hc, hr
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
