#!/usr/bin/env python3
"""torch's side of `hiercoll bench-gemm`, measured on the same machine in the same session.

    torchrun --nproc-per-node 4 benchmarks/torch/gemm_baseline.py [--shapes 8192x8192x28672,...]

For each M x N x K shape (K split over the ranks, bf16), the slowest rank's median time per call of:
  mm            torch.mm(A [M, K/world], B [K/world, N]), whole
  mm blocks     the same product as world row blocks of M/world rows, one mm each (what an
                overlapped producer computes), back to back
  rs            reduce_scatter_tensor of the [M, N] product (NCCL)
  mm then rs    the two in a row
  async-TP      torch.ops.symm_mem.fused_matmul_reduce_scatter, where this torch build runs it
                (with TORCH_SYMM_MEM_DISABLE_MULTICAST=1); otherwise the reason it did not run.
Times come from CUDA events around `--iters` calls, best of `--reps` measurements.
"""

import os

# NVLink multicast stays off (DESIGN.md, safety rule), set before torch is imported.
_MULTICAST_OFF = (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"))
for _name, _off in _MULTICAST_OFF:
    os.environ.setdefault(_name, _off)
    if os.environ[_name] != _off:
        raise SystemExit(f"gemm_baseline: {_name}={os.environ[_name]!r} would allow NVLink multicast; refused")

import argparse  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def timed(fn, iters, reps):
    """Best over reps of the mean device time per call of fn, in ms, as the slowest rank saw it."""
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        t = torch.tensor([start.elapsed_time(end) / iters], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        best = min(best, t.item())
    return best


def fused_runner(a, b, group):
    """A callable running async-TP's fused matmul + reduce-scatter, or the reason there is none."""
    try:
        from torch.distributed import _symmetric_memory as symm_mem

        enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
        if enable is not None:
            enable(group.group_name)
        op = torch.ops.symm_mem.fused_matmul_reduce_scatter

        def run():
            return op(a, b, "sum", 0, group.group_name)

        run()
        torch.cuda.synchronize()
        return run, None
    except Exception as e:  # any failure is reported, not hidden
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x28672,8192x8192x8192,4096x8192x28672")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    group = dist.group.WORLD
    if rank == 0:
        print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} x {torch.cuda.get_device_name()}, bf16; ms per call, slowest rank, best of {args.reps}")
        print(f"{'shape(MxNxK)':>18} {'mm':>8} {'mm blocks':>10} {'rs':>8} {'mm then rs':>11} {'async-TP':>9}")
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.lower().split("x"))
        kl = k // world
        torch.manual_seed(1234 + rank)
        a = torch.randn(m, kl, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(kl, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(m // world, n, device="cuda", dtype=torch.bfloat16)
        rows = m // world
        blocks = [(a[i * rows:(i + 1) * rows], c[i * rows:(i + 1) * rows]) for i in range(world)]

        def mm():
            torch.mm(a, b, out=c)

        def mm_blocks():
            for ab, cb in blocks:
                torch.mm(ab, b, out=cb)

        def rs():
            dist.reduce_scatter_tensor(out, c, group=group)

        def mm_rs():
            mm()
            rs()

        t_mm = timed(mm, args.iters, args.reps)
        t_blocks = timed(mm_blocks, args.iters, args.reps)
        t_rs = timed(rs, args.iters, args.reps)
        t_mm_rs = timed(mm_rs, args.iters, args.reps)
        fused, why = fused_runner(a, b, group)
        t_fused = timed(fused, args.iters, args.reps) if fused else None
        if rank == 0:
            fused_s = f"{t_fused:9.3f}" if t_fused is not None else f"  n/a ({why})"
            print(f"{shape:>18} {t_mm:8.3f} {t_blocks:10.3f} {t_rs:8.3f} {t_mm_rs:11.3f} {fused_s}", flush=True)
        del a, b, c, out, blocks
        torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
