#!/usr/bin/env python3
"""hiercoll's fp8 (e4m3) GEMM and GEMM + reduce-scatter beside torch's, in the same processes.

    torchrun --nproc-per-node 1 benchmarks/torch/gemm_fp8.py             # one GPU: the GEMM alone
    torchrun --nproc-per-node 4 benchmarks/torch/gemm_fp8.py             # 4 GPUs: GEMM + reduce-scatter
    HIERCOLL_DEVICE=0 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py --shared-gpu   # check only
    ... gemm_fp8.py --scaling row                                        # or block; default tensor

Operands: A [M, K] and a Linear weight W [N, K] drawn from a normal distribution and quantised to
float8_e4m3fn with scales of amax / 448 (--scaling): per tensor; row-wise (a scale per row of A and per
row of W, i.e. per column of the product: scale_a [M, 1], scale_b [1, N]); or block-wise (per 1 x 128
block of A and 128 x 128 block of W: scale_a [M, K/128] M-major, scale_b [K/128, N/128] the transpose
of a contiguous [N/128, K/128], as torch._scaled_mm takes them). The product is the scaled A @ W^T in
bf16; the same scales go to torch._scaled_mm and to hiercoll.

One rank: per local shape (default: the local GEMMs of the overlap shapes), paths timed call by call in
random order within each round (CUDA events around each call; the mean over --iters calls per round; the
median over --rounds rounds with the spread):
  own fp8         hiercoll.gemm (the own GEMM through the C ABI, a stream-K workspace)
  own whole       the same without a workspace: whole tiles only (whole/own above 1: stream-K is faster)
  scaled_mm fast  torch._scaled_mm(..., use_fast_accum=True): fp8 tensor-core accumulation, as the own GEMM
  scaled_mm       torch._scaled_mm(..., use_fast_accum=False): cuBLASLt's promoted accumulation
                  (either shown as n/a, with torch's reason, where torch refuses it for the scaling)
  own bf16        hiercoll.gemm on the bf16 operands before quantisation
  mm bf16         torch.mm on them
Checked first, outputs poisoned (NaN): no element of the own GEMM's output is left unwritten, and on sampled
rows its error against the fp64 product of the dequantised operands is at most twice scaled_mm fast's (or,
where that is refused, scaled_mm's) plus one bf16 rounding of the largest value (fp8 accumulation on Hopper's
tensor cores is not fp32-exact, so the bound is set by the hardware's own figure, measured in the same call).

Several ranks: each rank's operands come from its seed, so every rank can compute the reference for its own
rows: the sum over ranks of the fp64 products, on sampled rows, against hiercoll's
ReduceScatter2D.scaled_matmul_reduce_scatter (poisoned first) within the same kind of bound (twice the error of
the sum of torch's fast-accumulation products, plus one bf16 rounding; where torch runs none for the scaling,
2^-9 of the products' magnitudes per 128-deep k block, hiercoll's GPU test's bound). With distinct GPUs, then timed interleaved
call by call, each call from a meeting of the ranks (gemm_baseline.timed_interleaved; slowest rank): hiercoll, async-TP's
torch.ops.symm_mem.fused_scaled_matmul_reduce_scatter (use_fast_accum=True) where it runs, and _scaled_mm then
NCCL's reduce_scatter_tensor. --shared-gpu (ranks on one GPU, as HIERCOLL_DEVICE=0 puts hiercoll's): the check
only, no NCCL. async-TP's time moves between processes (benchmarks/RESULTS.md): compare with it over several
processes.
"""

import os

# NVLink multicast stays off (DESIGN.md, safety rule), set before torch is imported.
_MULTICAST_OFF = (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"))
for _name, _off in _MULTICAST_OFF:
    os.environ.setdefault(_name, _off)
    if os.environ[_name] != _off:
        raise SystemExit(f"gemm_fp8: {_name}={os.environ[_name]!r} would allow NVLink multicast; refused")

import argparse  # noqa: E402
import random  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gemm_baseline import median, timed_interleaved  # noqa: E402  (beside this script)

E4M3_MAX = 448.0
BF16_U = 2.0 ** -8


BLOCK = 128  # block-wise scales: 1 x BLOCK blocks of A, BLOCK x BLOCK blocks of W


def _amax_scale(amax):
    return (amax.float() / E4M3_MAX).clamp_min(1e-12)


def quantise(x, scaling, weight):
    """x ([rows, K]) as float8_e4m3fn with scales of the scaling: (x8, s) with x ~ dequantise(x8, s). s is
    per tensor [1]; row-wise [rows, 1]; block-wise [rows, K/128] for A (1 x 128 blocks), [rows/128, K/128]
    for a weight (128 x 128 blocks), row-major."""
    rows, k = x.shape
    if scaling == "tensor":
        s = _amax_scale(x.abs().amax()).reshape(1)
    elif scaling == "row":
        s = _amax_scale(x.abs().amax(dim=1, keepdim=True))
    else:
        kb, rb = -(-k // BLOCK), -(-rows // BLOCK) if weight else rows
        pad = torch.zeros(rb * (BLOCK if weight else 1), kb * BLOCK, device=x.device, dtype=x.dtype)
        pad[:rows, :k] = x.abs()
        if weight:
            s = _amax_scale(pad.reshape(rb, BLOCK, kb, BLOCK).amax(dim=(1, 3)))
        else:
            s = _amax_scale(pad.reshape(rows, kb, BLOCK).amax(dim=2))
    return (x.float() / expand(s, scaling, weight, rows, k)).to(torch.float8_e4m3fn), s.contiguous()


def expand(s, scaling, weight, rows, k):
    """Scales s (as quantise returns them) as one per element of a [rows, k] operand."""
    if scaling == "tensor":
        return s
    if scaling == "row":
        return s
    if weight:
        return s.repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)[:rows, :k]
    return s.repeat_interleave(BLOCK, dim=1)[:, :k]


def torch_scales(sa, sw, scaling):
    """The scales as torch._scaled_mm (and hiercoll) take them for a8 @ w8.t(): scale_a as is (block-wise
    M-major: the transpose of a contiguous [K/128, M]), scale_b [1, N] row-wise, block-wise the transpose of
    the contiguous [N/128, K/128]."""
    if scaling == "row":
        return sa, sw.t()
    if scaling == "block":
        return sa.t().contiguous().t(), sw.t()
    return sa, sw


def operands(seed, m, n, k, dev, scaling):
    """A [m, k] and W [n, k] in bf16, and quantised: a8, scale_a, w8, scale_b (torch's layouts for
    a8 @ w8.t()), with the row-major scales sa_rm, sw_rm for dequantising."""
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16, generator=g)
    a8, sa_rm = quantise(a, scaling, weight=False)
    w8, sw_rm = quantise(w, scaling, weight=True)
    sa, sw = torch_scales(sa_rm, sw_rm, scaling)
    return a, w, a8, sa, w8, sw, (sa_rm, sw_rm)


def exact_rows(a8, w8, rm, rows, scaling, with_abs=False):
    """The fp64 product of the dequantised operands on the given rows (with_abs: and the sums of the
    products' magnitudes)."""
    sa_rm, sw_rm = rm
    k, n = a8.shape[1], w8.shape[0]
    sa_rows = sa_rm if scaling == "tensor" else expand(sa_rm[rows], scaling, False, len(rows), k)
    a = a8[rows].double() * sa_rows.double()
    w = w8.double() * expand(sw_rm, scaling, True, n, k).double()
    if with_abs:
        return a @ w.t(), a.abs() @ w.abs().t()
    return a @ w.t()


def scaled_mm(a8, w8t, sa, sw, out_dtype, fast):
    """torch._scaled_mm with fast accumulation or not (a refusal raises)."""
    return torch._scaled_mm(a8, w8t, sa, sw, out_dtype=out_dtype, use_fast_accum=fast)


def refusal(fn):
    """None if fn() runs, else torch's reason (the first line)."""
    try:
        fn()
        return None
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def interleaved(fns, iters, rng):
    """The mean time (ms) of each of fns over iters calls each, the calls in random order, each timed alone."""
    n = len(fns)
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(n * iters + 1)]
    who = []
    marks[0].record()
    for _ in range(iters):
        order = list(range(n))
        rng.shuffle(order)
        for p in order:
            fns[p]()
            who.append(p)
            marks[len(who)].record()
    marks[-1].synchronize()
    sums = [0.0] * n
    for i, p in enumerate(who):
        sums[p] += marks[i].elapsed_time(marks[i + 1])
    return [s / iters for s in sums]


def one_gpu(hc, shapes, args):
    dev = torch.device("cuda", torch.cuda.current_device())
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, fp8 e4m3 -> bf16 GEMM, {args.scaling} scaling; "
          f"us per call, median of {args.rounds} rounds [min..max] of the mean of {args.iters} calls, paths "
          f"interleaved call by call")
    names = ["own fp8", "own whole", "scaled_mm fast", "scaled_mm", "own bf16", "mm bf16"]
    print(f"{'shape(MxNxK)':>18} " + " ".join(f"{nm:>26}" for nm in names)
          + f" {'TFLOP/s':>8} {'fast/own':>9} {'slow/own':>9} {'whole':>7} {'bf16/fp8':>9}  check")
    for m, n, k in shapes:
        a, w, a8, sa, w8, sw, rm = operands(1234, m, n, k, dev, args.scaling)
        c8 = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        hc.gemm(a8, w8.t(), sa, sw, out=c8)
        # torch's two accumulations, each where it runs this scaling.
        why = {fast: refusal(lambda: scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, fast))
               for fast in (True, False)}
        ref_out = {fast: scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, fast)
                   for fast in (True, False) if why[fast] is None}
        torch.cuda.synchronize()
        unwritten = int(torch.isnan(c8).sum())
        rows = torch.randperm(m, device=dev)[:args.check_rows]
        ref = exact_rows(a8, w8, rm, rows, args.scaling)
        err = lambda c: (c[rows].double() - ref).abs().max().item()  # noqa: E731
        e_own = err(c8)
        e_torch = {fast: err(c) for fast, c in ref_out.items()}
        if not e_torch:
            print(f"{f'{m}x{n}x{k}':>18} FAILED: torch._scaled_mm runs no {args.scaling} scaling here "
                  f"(fast: {why[True]}; promoted: {why[False]}); no bound to check against", flush=True)
            raise SystemExit(1)
        e_bound = e_torch.get(True, e_torch.get(False))
        bound = 2 * e_bound + BF16_U * ref.abs().max().item()
        ok = unwritten == 0 and e_own <= bound
        fmt = lambda fast: f"{e_torch[fast]:.3g}" if fast in e_torch else "n/a"  # noqa: E731
        check = (f"{'ok' if ok else 'FAILED'}: max err vs fp64 own {e_own:.3g}, scaled_mm fast {fmt(True)}, "
                 f"scaled_mm {fmt(False)} (bound {bound:.3g}); unwritten {unwritten}")
        cb = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        c16 = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        wt = w.t()
        lib, world = hc._lib.lib(), hc.current().handle
        stream = torch.cuda.current_stream().cuda_stream
        code = hc.scaling.CODES[args.scaling]
        ska, skb = hc.scaling.kernel_layout(args.scaling, sa, sw)

        def whole():  # hc_gemm_ex without a workspace
            hc._lib.check(lib.hc_gemm_ex(world, hc._lib.HC_E4M3, a8.data_ptr(), k, w8.data_ptr(), k, hc._lib.HC_B_NK,
                                         code, ska.data_ptr(), skb.data_ptr(), hc._lib.HC_BF16, c8.data_ptr(), n, m,
                                         n, k, 0, stream))

        fns = [
            lambda: hc.gemm(a8, w8.t(), sa, sw, out=c8),
            whole,
            (lambda: scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, True)) if True in e_torch else None,
            (lambda: scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, False)) if False in e_torch else None,
            lambda: hc.gemm(a, wt, out=c16),
            lambda: torch.mm(a, wt, out=cb),
        ]
        live = [i for i, f in enumerate(fns) if f is not None]
        for i in live:  # warm-up
            fns[i]()
        rng = random.Random(m * 131 + n * 7 + k)
        got = [[] for _ in fns]
        for _ in range(args.rounds):
            for i, t in zip(live, interleaved([fns[i] for i in live], args.iters, rng)):
                got[i].append(t * 1000)
        med = [median(g) if g else float("nan") for g in got]
        flop = 2.0 * m * n * k
        cells = " ".join(f"{f'{md:.1f} [{min(g):.1f}..{max(g):.1f}]' if g else 'n/a':>26}" for md, g in zip(med, got))
        print(f"{f'{m}x{n}x{k}':>18} {cells} {flop / med[0] / 1e6:8.1f} {med[2] / med[0]:9.3f} {med[3] / med[0]:9.3f} "
              f"{med[1] / med[0]:7.3f} {med[4] / med[0]:9.3f}  {check}", flush=True)
        for fast in (True, False):
            if why[fast] is not None:
                print(f"{'':>18} scaled_mm {'fast' if fast else 'promoted'} accumulation n/a for {args.scaling} "
                      f"scaling: {why[fast]}", flush=True)
        if not ok:
            raise SystemExit(1)
        del a, w, a8, w8, c8, ref_out, cb, c16
        torch.cuda.empty_cache()
    print("  fast/own, slow/own = scaled_mm (fast / promoted accumulation) time / own fp8 time (above 1: own faster); "
          "whole = own whole time / own fp8 time; bf16/fp8 = own bf16 time / own fp8 time")


def torch_rows(a8, sa, w8, sw, sel, scaling):
    """torch._scaled_mm's product on rows sel (fp64) and how it was taken: fp32 out with fast accumulation
    where torch runs it for the scaling, else the first of promoted accumulation and bf16 out that runs;
    (None, its reasons) where torch runs none."""
    a_rows = a8[sel]
    sa_rows = sa if scaling == "tensor" else sa[sel]
    if scaling == "block":
        sa_rows = sa_rows.t().contiguous().t()  # M-major, as torch wants block-wise scale_a
    tried = []
    for out_dtype, fast in ((torch.float32, True), (torch.float32, False), (torch.bfloat16, True),
                            (torch.bfloat16, False)):
        how = f"{str(out_dtype).replace('torch.', '')} out, {'fast' if fast else 'promoted'} accumulation"
        try:
            return scaled_mm(a_rows, w8.t(), sa_rows, sw, out_dtype, fast).double(), how
        except (RuntimeError, ValueError, TypeError, NotImplementedError) as e:
            tried.append(f"{how}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    return None, f"torch._scaled_mm runs no {scaling} scaling of these rows here: " + "; ".join(tried)


def async_tp_fp8(a8, w8t, sa, sw, m, n, group):
    """A callable running async-TP's fp8 matmul + reduce-scatter, or the reason there is none."""
    try:
        from torch.distributed import _symmetric_memory as symm_mem

        enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
        if enable is not None:
            enable(group.group_name)
        op = torch.ops.symm_mem.fused_scaled_matmul_reduce_scatter

        def run():
            return op(a8, w8t, sa, sw, "sum", 0, 0, group.group_name, [m, n],
                      out_dtype=torch.bfloat16, use_fast_accum=True)

        run()
        torch.cuda.synchronize()
        return run, None
    except Exception as e:  # any failure is reported, not hidden
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def several(hc, shapes, args):
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", torch.cuda.current_device())
    group = dist.group.WORLD
    if rank == 0:
        print(f"torch {torch.__version__}, {world} ranks on {torch.cuda.get_device_name()}"
              f"{' (one GPU shared)' if args.shared_gpu else ''}, fp8 e4m3 GEMM + reduce-scatter to bf16, "
              f"{args.scaling} scaling, K split over the ranks; ms per call, slowest rank, median of {args.rounds} "
              f"measurements [spread], paths interleaved call by call, each call from a meeting of the ranks")
    for m, n, kfull in shapes:
        k = kfull // world
        rows = m // world
        mine = None
        exact, absum, fast_sum = 0, 0, 0
        sel = torch.arange(rank * rows, (rank + 1) * rows, device=dev)[
            torch.randperm(rows, device=dev, generator=torch.Generator(device=dev).manual_seed(7))[:args.check_rows]]
        torch_how, refused = None, None
        for r in range(world):  # every rank's operands, from its seed: the reference for this rank's rows
            a, w, a8, sa, w8, sw, rm = operands(1234 + r, m, n, k, dev, args.scaling)
            e, ab = exact_rows(a8, w8, rm, sel, args.scaling, with_abs=True)
            exact, absum = exact + e, absum + ab
            part, how = torch_rows(a8, sa, w8, sw, sel, args.scaling)
            if part is None:
                fast_sum, refused = None, how
            elif fast_sum is not None:
                fast_sum, torch_how = fast_sum + part, how
            if r == rank:
                mine = (a8, sa, w8, sw)
            del a, w
        a8, sa, w8, sw = mine
        rs = hc.ReduceScatter2D(m, n, torch.bfloat16, overlap_with_gemm=True)
        out = torch.full((rows, n), float("nan"), device=dev, dtype=torch.bfloat16)
        rs.scaled_matmul_reduce_scatter(a8, w8.t(), sa, sw, out)
        torch.cuda.synchronize()
        got = out[sel - rank * rows].double()
        e_own = (got - exact).abs().max().item()
        if fast_sum is not None:
            e_fast = (fast_sum.to(torch.bfloat16).double() - exact).abs().max().item()
            bound = 2 * e_fast + BF16_U * exact.abs().max().item()
        else:  # no torch figure: the bound of hiercoll's GPU test (2^-9 of the magnitudes per 128-deep k block)
            e_fast = float("nan")
            bound = BF16_U * exact.abs().max().item() + -(-k // BLOCK) * 2.0 ** -9 * absum.max().item()
        unwritten = int(torch.isnan(out).sum())
        bad = torch.tensor([0.0 if unwritten == 0 and e_own <= bound else 1.0, e_own, bound], device=dev)
        gathered = [torch.zeros_like(bad) for _ in range(world)] if not args.shared_gpu else None
        if args.shared_gpu:
            failed = bad[0].item() > 0
            print(f"rank {rank} {m}x{n}x{kfull}: {'FAILED' if failed else 'ok'}: max err vs fp64 {e_own:.3g}, "
                  + (f"torch's sum ({torch_how}) {e_fast:.3g}" if refused is None else f"no torch figure ({refused})")
                  + f" (bound {bound:.3g}); unwritten {unwritten}", flush=True)
            rs.close()
            if failed:
                raise SystemExit(1)
            continue
        dist.all_gather(gathered, bad)
        failed = any(g[0].item() > 0 for g in gathered)
        check = ("FAILED" if failed else "ok") + ": max err vs fp64 " + ", ".join(
            f"{g[1].item():.3g} (bound {g[2].item():.3g})" for g in gathered)
        ref_out = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)

        fast = refusal(lambda: scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, True)) is None

        def mm_rs():
            c = scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, fast)
            dist.reduce_scatter_tensor(ref_out, c, group=group)

        fused, why = async_tp_fp8(a8, w8.t(), sa, sw, m, n, group)
        fns = [lambda: rs.scaled_matmul_reduce_scatter(a8, w8.t(), sa, sw, out), mm_rs] + ([fused] if fused else [])
        got_t = timed_interleaved(fns, args.iters, args.rounds)
        med = [median(g) for g in got_t]
        if rank == 0:
            names = ["hiercoll", "scaled_mm then rs"] + (["async-TP fp8"] if fused else [])
            cells = ", ".join(f"{nm} {md:.3f} [{min(g):.3f}..{max(g):.3f}]" for nm, md, g in zip(names, med, got_t))
            ratio = f"; async-TP / hiercoll {med[2] / med[0]:.3f}" if fused else f"; async-TP n/a ({why})"
            print(f"{m}x{n}x{kfull}: {cells}; (scaled_mm then rs) / hiercoll {med[1] / med[0]:.3f}{ratio}; {check}",
                  flush=True)
        rs.close()
        if failed:
            raise SystemExit(1)
        del ref_out, out
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="", help="MxNxK, comma-separated: local GEMMs on one rank (default: those of "
                    "the overlap shapes on 2 and 4 GPUs), the whole product on several (K split; default: the overlap "
                    "shapes)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check-rows", type=int, default=64, help="rows checked against the fp64 product")
    ap.add_argument("--shared-gpu", action="store_true", help="the ranks share one GPU: check only")
    ap.add_argument("--scaling", choices=("tensor", "row", "block"), default="tensor",
                    help="the scales: per tensor, row-wise (per row of A and of W) or block-wise (1 x 128 blocks of A, "
                    "128 x 128 of W), as torch._scaled_mm takes them")
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error("--rounds must be at least 3 (medians)")

    dist.init_process_group("gloo" if os.environ.get("WORLD_SIZE", "1") != "1" and args.shared_gpu else "nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(0 if args.shared_gpu else int(os.environ.get("LOCAL_RANK", rank)))
    import hiercoll as hc
    hc.init()
    if args.shapes:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes.split(",")]
    elif world == 1:
        shapes = [(8192, 8192, 7168), (8192, 8192, 2048), (4096, 8192, 7168), (8192, 8192, 14336), (8192, 8192, 4096)]
    else:
        shapes = [(8192, 8192, 28672), (8192, 8192, 8192), (4096, 8192, 28672)]
    try:
        if world == 1:
            one_gpu(hc, shapes, args)
        else:
            several(hc, shapes, args)
    finally:
        hc.finalize()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
