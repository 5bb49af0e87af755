#!/usr/bin/env python3
"""s39 probe: the own fp8 GEMM and torch._scaled_mm (fast accumulation), row-wise and per tensor, timed hot (20 calls
back to back, events around the batch) and cold (L2 flushed by a 512 MiB write before each call, events around the
call alone), paths in turn, 5 rounds; prints medians [min..max] in us. Run from the repository root as gemm_fp8.py is."""
import os, sys, statistics
import torch
import torch.distributed as dist
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "benchmarks", "torch"))
import gemm_fp8 as g  # noqa: E402

dist.init_process_group("nccl")
torch.cuda.set_device(0)
import hiercoll as hc  # noqa: E402
hc.init()
dev = torch.device("cuda", 0)
flush = torch.empty(512 << 20, dtype=torch.uint8, device=dev)


def hot(fn, n=20):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1000 / n


def cold(fn, n=10):
    t = 0.0
    for _ in range(n):
        flush.zero_()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        t += e0.elapsed_time(e1) * 1000
    return t / n


shapes = [(4096, 8192, 2048), (16384, 4096, 3584), (8192, 8192, 7168)]
for m, n, k in shapes:
    paths = {}
    for sc in ("row", "tensor"):
        a, w, a8, sa, w8, sw, rm = g.operands(1234, m, n, k, dev, sc)
        c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        paths[f"own {sc}"] = (lambda a8=a8, w8=w8, sa=sa, sw=sw, c=c: hc.gemm(a8, w8.t(), sa, sw, out=c))
        paths[f"cublas {sc}"] = (lambda a8=a8, w8=w8, sa=sa, sw=sw: g.scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, True))
    for f in paths.values():
        f()
    torch.cuda.synchronize()
    res = {(p, mode): [] for p in paths for mode in ("hot", "cold")}
    for r in range(5):
        for p, f in paths.items():
            res[(p, "hot")].append(hot(f))
        for p, f in paths.items():
            res[(p, "cold")].append(cold(f))
    print(f"{m}x{n}x{k}", flush=True)
    for mode in ("hot", "cold"):
        line = []
        for p in paths:
            v = res[(p, mode)]
            line.append(f"{p} {statistics.median(v):.1f} [{min(v):.1f}..{max(v):.1f}]")
        med = {p: statistics.median(res[(p, mode)]) for p in paths}
        print(f"  {mode:4s} " + "; ".join(line) + f"; cublas/own row {med['cublas row'] / med['own row']:.3f}, "
              f"tensor {med['cublas tensor'] / med['own tensor']:.3f}, own row/tensor {med['own row'] / med['own tensor']:.3f}", flush=True)
hc.finalize()
dist.destroy_process_group()
