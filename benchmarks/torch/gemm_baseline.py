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
Times: the median of `--reps` measurements, their spread on the line below; in each measurement round
every path's `--iters` calls run interleaved call by call in one stream, each call timed by CUDA events from
a meeting of the ranks on the stream to its end, as `hiercoll bench-gemm` times its paths (timed a path at a
time, a path timed first, on a GPU not yet at its power limit, reads fast). async-TP's time moves between
processes (benchmarks/RESULTS.md): compare with it over several.
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


def timed_interleaved(fns, iters, reps):
    """reps measurements of each of fns, in ms per call as the slowest rank saw it. In each round every
    function's iters calls run interleaved call by call in one stream, each round's cycle starting with the
    next function, so that every path runs at the power-limit state the others run at (as `hiercoll
    bench-gemm` times its paths). Each call is timed from a meeting of the ranks on the stream (an all-reduce
    of one element, which ends on each rank only once every rank's stream reached it) to its own end: the
    ranks' GPUs run at different speeds, and a call starting where the previous one ended on each rank would
    add their skew to the first path after it that meets."""
    n = len(fns)
    meeting = torch.zeros(1, device="cuda")
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(2 * n * iters)]
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    got = [[] for _ in fns]
    for r in range(reps):
        dist.barrier()
        for fn in fns:
            fn()
        who = []
        for k in range(n * iters):
            i = (r + k) % n
            dist.all_reduce(meeting)
            marks[2 * k].record()
            fns[i]()
            marks[2 * k + 1].record()
            who.append(i)
        marks[-1].synchronize()
        sums = [0.0] * n
        for k, i in enumerate(who):
            sums[i] += marks[2 * k].elapsed_time(marks[2 * k + 1])
        t = torch.tensor([s / iters for s in sums], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        for i, v in enumerate(t.tolist()):
            got[i].append(v)
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
              "measurements [spread], paths interleaved call by call, each call from a meeting of the ranks")
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
        got = timed_interleaved(fns, args.iters, args.reps)
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
