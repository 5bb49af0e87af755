#!/usr/bin/env python3
"""torch's side of `hiercoll bench-gemm`, measured on the same machine in the same job.

    torchrun --nproc-per-node 4 benchmarks/torch/gemm_baseline.py [--shapes 8192x8192x28672,...]

For each M x N x K shape (K split over the ranks, bf16), the slowest rank's median time per call of:
  mm            torch.mm(A [M, K/world], B [K/world, N]), whole
  mm blocks     the same product as world row blocks of M/world rows, one mm each (what an
                overlapped producer computes), back to back
  rs            reduce_scatter_tensor of the [M, N] product (NCCL)
  mm then rs    the two in a row
  async-TP      torch.ops.symm_mem.fused_matmul_reduce_scatter, where this torch build runs it
                (with TORCH_SYMM_MEM_DISABLE_MULTICAST=1); otherwise the reason it did not run.
  hiercoll      with --hiercoll: hiercoll's ReduceScatter2D.matmul_reduce_scatter from this same process
                (hiercoll's own GEMM through the C ABI where it runs, signalling each segment of a
                destination's rows as it is stored, else torch.mm row blocks in consumption order on a
                side stream; the copy-engine scatter; --split-first: the first block in two halves);
                its output is checked against mm then rs.
Times come from CUDA events around `--iters` calls: the median of `--reps` measurements, their spread on the
line below; within a measurement round the paths run in turn, each round starting with the next (a path
timed first, on a GPU not yet at its power limit, reads fast). async-TP's time moves between processes
(benchmarks/RESULTS.md): compare with it over several.
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


def mean_ms(fn, iters):
    """The mean device time per call of fn over iters calls, in ms, as the slowest rank saw it."""
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    t = torch.tensor([start.elapsed_time(end) / iters], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def timed_in_turn(fns, iters, reps):
    """reps measurements (mean_ms) of each of fns, the functions measured in turn within each round, each
    round starting with the next function (as `hiercoll bench-gemm` does): the GPUs run at their power limit,
    and a path measured first, on a GPU still cool, would run faster than one measured after the others."""
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    got = [[] for _ in fns]
    for r in range(reps):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            got[i].append(mean_ms(fns[i], iters))
    return got


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


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
    ap.add_argument("--hiercoll", action="store_true", help="add hiercoll's matmul_reduce_scatter (the package on "
                    "PYTHONPATH or installed, the library through HIERCOLL_LIB)")
    ap.add_argument("--split-first", action="store_true", help="with --hiercoll: its context splits the first block")
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    group = dist.group.WORLD
    if rank == 0:
        print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} x {torch.cuda.get_device_name()}, bf16; ms per call, slowest rank, median of {args.reps} "
              "measurements [spread], paths in turn")
        print(f"{'shape(MxNxK)':>18} {'mm':>8} {'mm blocks':>10} {'rs':>8} {'mm then rs':>11} {'async-TP':>9}"
              + (f" {'hiercoll':>9}  check" if args.hiercoll else ""))
    hc = None
    if args.hiercoll:
        import hiercoll as hc
        hc.init()
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

        fused, why = fused_runner(a, b, group)
        fns = [mm, mm_blocks, rs, mm_rs] + ([fused] if fused else [])
        hrs, check = None, ""
        if hc is not None:
            hrs = hc.ReduceScatter2D(m, n, torch.bfloat16, overlap_with_gemm=True, split_first_block=args.split_first)
            hout = torch.full_like(out, float("nan"))
            hrs.matmul_reduce_scatter(a, b, hout)
            mm_rs()
            torch.cuda.synchronize()
            # The same sums in another order: within a few bf16 ulps of the result's magnitude.
            diff = (hout.float() - out.float()).abs().max()
            scale = out.float().abs().max().clamp_min(1e-30)
            d = torch.tensor([diff / scale], device="cuda")
            dist.all_reduce(d, op=dist.ReduceOp.MAX)
            check = f"max |hiercoll - (mm then rs)| = {d.item():.2e} of max |out|" + (" FAILED" if not d.item() <= 2.0 ** -6 else "")
            fns.append(lambda: hrs.matmul_reduce_scatter(a, b, hout))
        got = timed_in_turn(fns, args.iters, args.reps)
        times = [median(g) for g in got]
        t_mm, t_blocks, t_rs, t_mm_rs = times[:4]
        t_fused = times[4] if fused else None
        if rank == 0:
            fused_s = f"{t_fused:9.3f}" if t_fused is not None else f"  n/a ({why})"
            hc_s = f" {times[-1]:9.3f}  {check}" if hrs is not None else ""
            print(f"{shape:>18} {t_mm:8.3f} {t_blocks:10.3f} {t_rs:8.3f} {t_mm_rs:11.3f} {fused_s}{hc_s}", flush=True)
            names = ["mm", "mm blocks", "rs", "mm then rs"] + (["async-TP"] if fused else []) + (["hiercoll"] if hrs is not None else [])
            print(f"{'':>18} spread: " + ", ".join(f"{nm} [{min(g):.3f}..{max(g):.3f}]" for nm, g in zip(names, got)), flush=True)
        if hrs is not None:
            hrs.close()
        del a, b, c, out, blocks
        torch.cuda.empty_cache()
    if hc is not None:
        hc.finalize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
