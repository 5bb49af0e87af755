#!/usr/bin/env python3
"""Pending probe (thirty-ninth session): the own fp8 GEMM and torch._scaled_mm with fast accumulation, row-wise and
per tensor, each call timed alone (events around it, the host waiting for it) after a gap of a given kind: none (only
the host's round trip since the last call), after the GPU spun for G microseconds more (torch.cuda._sleep, a
low-power spin), or after a 512 MiB write (L2 flushed); run04's probe in results/2026-11-29-s39 has calls truly back
to back beside these. Paths and gaps in turn, --rounds rounds of --iters calls; prints each path's median
[min..max] in us per gap and the ratios cuBLAS / own. Run from the repository root as gemm_fp8.py is (RANK=0 WORLD_SIZE=1 ..., HIERCOLL_LIB=...)."""
import argparse
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks", "torch"))
import gemm_fp8 as g  # noqa: E402  (operands, quantisation, scaled_mm)


def spin_cycles_per_us():
    """torch.cuda._sleep's cycles per microsecond, measured once."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    torch.cuda._sleep(10_000_000)
    e1.record()
    e1.synchronize()
    return 10_000_000 / (e0.elapsed_time(e1) * 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x8192x2048,16384x4096x3584,8192x8192x7168")
    ap.add_argument("--gaps", default="none,20,100,500,flush", help="none, a spin of N us, or flush")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(0)
    import hiercoll as hc
    hc.init()
    dev = torch.device("cuda", 0)
    flush = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
    cpu = spin_cycles_per_us()
    print(f"{torch.cuda.get_device_name()}: torch.cuda._sleep at {cpu:.0f} cycles/us; us per call, median [min..max] "
          f"of {args.rounds} rounds' means of {args.iters} calls, each timed alone after its gap", flush=True)

    def before(gap):
        if gap == "flush":
            flush.zero_()
        elif gap != "none":
            torch.cuda._sleep(int(float(gap) * cpu))

    try:
        for shape in args.shapes.split(","):
            m, n, k = (int(x) for x in shape.split("x"))
            paths = {}
            for sc in ("row", "tensor"):
                a, w, a8, sa, w8, sw, _ = g.operands(1234, m, n, k, dev, sc)
                c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
                paths[f"own {sc}"] = lambda a8=a8, w8=w8, sa=sa, sw=sw, c=c: hc.gemm(a8, w8.t(), sa, sw, out=c)
                paths[f"cublas {sc}"] = (lambda a8=a8, w8=w8, sa=sa, sw=sw:
                                         g.scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, True))
            for f in paths.values():
                f()
            torch.cuda.synchronize()
            res = {}
            for _ in range(args.rounds):
                for gap in args.gaps.split(","):
                    for p, f in paths.items():
                        t = 0.0
                        for _ in range(args.iters):
                            before(gap)
                            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            e0.record()
                            f()
                            e1.record()
                            e1.synchronize()  # the next gap starts from an empty queue
                            t += e0.elapsed_time(e1) * 1000
                        res.setdefault((gap, p), []).append(t / args.iters)
            print(shape, flush=True)
            for gap in args.gaps.split(","):
                med = {p: statistics.median(res[(gap, p)]) for p in paths}
                cells = "; ".join(f"{p} {med[p]:.1f} [{min(res[(gap, p)]):.1f}..{max(res[(gap, p)]):.1f}]" for p in paths)
                print(f"  {gap:>6}: {cells}; cublas/own row {med['cublas row'] / med['own row']:.3f}, "
                      f"tensor {med['cublas tensor'] / med['own tensor']:.3f}", flush=True)
    finally:
        hc.finalize()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
