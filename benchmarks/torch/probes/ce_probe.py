#!/usr/bin/env python3
"""Ad-hoc probe (fourth session): how fast do copy-engine pushes and pulls move a GEMM's row
blocks between GPUs while the GEMM runs, and how fast is the GEMM beside them?

    torchrun --nproc-per-node 4 ce_probe.py [--m 8192 --n 8192 --k 8192]

Per rank: C [M, N] = A [M, K/world] @ B [K/world, N] in world row blocks; the copies move the
world-1 peer blocks (M/world rows each, in the ring order of the overlapped path: step s goes to
rank+s) either as pushes (local C -> peer buffer, the copy issued by the sender) or as pulls
(peer C -> local buffer, issued by the receiver). Copies start right away (no signal waits): the
point is the rate of the engines under GEMM load, not the protocol. Times are events, the slowest
rank, best of reps.
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


def slowest(ms):
    t = torch.tensor([ms], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x8192,8192x8192x28672")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mem", default="symm", help="symm (torch symmetric memory) or ipcraw (torch.empty mapped by the peers "
                    "with cuIpcOpenMemHandle, pushes by cuMemcpyAsync: as hiercoll); ipcraw runs the push cases only")
    ap.add_argument("--flat", action="store_true", help="(fifth session) enqueue the iterations back to back on each "
                    "stream, joined once at the end, instead of joining all streams after each iteration")
    ap.add_argument("--strict-bf16", action="store_true", help="(fifth session) torch.backends.cuda.matmul."
                    "allow_bf16_reduced_precision_reduction = False, as hiercoll's cuBLAS math mode "
                    "(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)")
    args = ap.parse_args()
    if args.strict_bf16:
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dev = torch.device("cuda")
    group = dist.group.WORLD
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        kl, rows = k // world, m // world
        a = torch.randn(m, kl, device=dev, dtype=torch.bfloat16)
        b = torch.randn(kl, n, device=dev, dtype=torch.bfloat16)
        if args.mem == "symm":
            c = symm_mem.empty(m, n, device=dev, dtype=torch.bfloat16)
            recv = symm_mem.empty(m, n, device=dev, dtype=torch.bfloat16)
            hc = symm_mem.rendezvous(c, group.group_name)
            hr = symm_mem.rendezvous(recv, group.group_name)
            peer_c = {p: hc.get_buffer(p, (m, n), torch.bfloat16) for p in range(world)}
            peer_r = {p: hr.get_buffer(p, (m, n), torch.bfloat16) for p in range(world)}
        else:
            import ctypes
            cu = ctypes.CDLL("libcuda.so.1")
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            recv = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            hc = hr = None

            class Handle(ctypes.Structure):
                _fields_ = [("reserved", ctypes.c_char * 64)]

            base, size, h = ctypes.c_uint64(), ctypes.c_size_t(), Handle()
            assert cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(recv.data_ptr())) == 0
            assert cu.cuIpcGetMemHandle(ctypes.byref(h), base) == 0
            got = [None] * world
            dist.all_gather_object(got, (bytes(bytearray(h)), recv.data_ptr() - base.value))
            peer_ptr = {}
            for p, (hb, off) in enumerate(got):
                if p != rank:
                    ptr = ctypes.c_uint64()
                    assert cu.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), Handle.from_buffer_copy(hb), 1) == 0
                    peer_ptr[p] = ptr.value + off
        gs = [torch.cuda.Stream() for _ in range(2)]
        cs = [torch.cuda.Stream() for _ in range(world)]
        main_s = torch.cuda.current_stream()
        blk = lambda t, d: t[d * rows:(d + 1) * rows]  # noqa: E731
        order = [(rank + s) % world for s in range(1, world)] + [rank]

        def gemm(nstreams):
            def fn():
                for i, d in enumerate(order):
                    st = gs[i % nstreams]
                    with torch.cuda.stream(st):
                        torch.mm(blk(a, d), b, out=blk(c, d))
            return fn

        def push(d):
            # local C rows of d -> d's receive buffer, slot rank
            if args.mem == "ipcraw":
                nbytes = rows * n * 2
                r_ = cu.cuMemcpyAsync(ctypes.c_uint64(peer_ptr[d] + rank * nbytes), ctypes.c_uint64(blk(c, d).data_ptr()),
                                      ctypes.c_size_t(nbytes), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
                assert r_ == 0, r_
                return
            blk(peer_r[d], rank).copy_(blk(c, d))

        def pull(src):
            # src's C rows of rank -> local receive buffer, slot src
            blk(recv, src).copy_(blk(peer_c[src], rank))

        def copies(kind, nstreams):
            def fn():
                for i in range(1, world):
                    st = cs[(i - 1) % nstreams]
                    with torch.cuda.stream(st):
                        if kind == "push":
                            push((rank + i) % world)
                        else:
                            pull((rank - i) % world)
            return fn

        def together(gfn, cfn):
            def body(inner=1):
                for st in gs + cs:
                    st.wait_stream(main_s)
                g0 = torch.cuda.Event(enable_timing=True)
                g1 = torch.cuda.Event(enable_timing=True)
                c1 = torch.cuda.Event(enable_timing=True)
                g0.record(main_s)
                for _ in range(inner):
                    if gfn:
                        gfn()
                    if cfn:
                        cfn()
                for st in gs:
                    main_s.wait_stream(st)
                g1.record(main_s)
                for st in cs:
                    main_s.wait_stream(st)
                c1.record(main_s)
                return {"_ev": (g0, g1, c1)}
            return body

        def run(label, body):
            body()
            torch.cuda.synchronize()
            best = None
            for _ in range(args.reps):
                dist.barrier()
                torch.cuda.synchronize()
                if args.flat:  # the iterations back to back on each stream, no join between them
                    evs = [body(args.iters)["_ev"]]
                else:
                    evs = [body()["_ev"] for _ in range(args.iters)]
                torch.cuda.synchronize()
                tot = slowest(sum(g0.elapsed_time(c1) for g0, _, c1 in evs) / args.iters)
                gem = slowest(sum(g0.elapsed_time(g1) for g0, g1, _ in evs) / args.iters)
                # first start to last end: includes any gap between iterations (host enqueue)
                span = slowest(evs[0][0].elapsed_time(evs[-1][2]) / args.iters)
                if best is None or tot < best[0]:
                    best = (tot, gem, span)
            mib = 2 * rows * n * (world - 1) / 2**20
            if rank == 0:
                print(f"{shape} {'flat ' if args.flat else ''}{'strict-bf16 ' if args.strict_bf16 else ''}{label:<30} total {best[0]:7.3f} ms  gemm done at {best[1]:7.3f} ms  "
                      f"(first start to last end / iters {best[2]:7.3f} ms) "
                      f"(copies carry {mib:.0f} MiB per GPU)", flush=True)

        for ns in (1, 2):
            run(f"gemm {ns} stream(s)", together(gemm(ns), None))
        kinds = ("push", "pull") if args.mem == "symm" else ("push",)
        for kind in kinds:
            for ns in (1, world - 1):
                run(f"{args.mem} {kind} alone, {ns} copy stream(s)", together(None, copies(kind, ns)))
        for kind in kinds:
            for ns in (1, world - 1):
                run(f"{args.mem} gemm + {kind}, {ns} copy str", together(gemm(1), copies(kind, ns)))
        del hc, hr
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
