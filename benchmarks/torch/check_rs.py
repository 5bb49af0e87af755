#!/usr/bin/env python3
"""hiercoll's ReduceScatter2D beside torch.distributed.reduce_scatter_tensor (NCCL), in one run.

    torchrun --nproc-per-node 4 benchmarks/torch/check_rs.py [--quick] [--iters 20]

1. The seed's check: M=8192, N=16384, bf16 torch.rand inputs, hiercoll against NCCL with
   torch.testing.assert_close(atol=6e-2, rtol=6e-2).
2. A sweep of shapes x dtypes: each checked against NCCL (int32 with integer inputs: atol=rtol=0,
   bit for bit) and, for floats, both against an fp64 reference; then both timed with CUDA events
   (median per call, the slowest rank's) and printed as a table with bus bandwidth
   (busbw = per-rank input bytes / time x (world-1)/world, as nccl-tests).
3. The host-side cost per call of the Python path: time.perf_counter around enqueue-only calls
   on a tiny tensor (the GPU is synchronised between batches, outside the timed part).

Needs the library (scripts/build-capi.sh) and the package (pip install ./python, or it is taken
from ../../python). The exit status is 1 when any check fails.
"""

import os

# NVLink multicast must stay off on the project's machines (DESIGN.md, safety rule): these are
# set before torch (and so torch.distributed, NCCL, NVSHMEM) is imported, and a run that would
# enable multicast is refused.
_MULTICAST_OFF = (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"))
for _name, _off in _MULTICAST_OFF:
    os.environ.setdefault(_name, _off)
    if os.environ[_name] != _off:
        raise SystemExit(f"check_rs: {_name}={os.environ[_name]!r} would allow NVLink multicast; "
                         f"this benchmark runs only with {_name}={_off}")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

try:
    import hiercoll  # noqa: E402
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
    import hiercoll  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "int32": torch.int32}
# Tolerances against NCCL (which rounds once per ring step; hiercoll accumulates in fp32).
TOLERANCE = {torch.bfloat16: 6e-2, torch.float16: 1e-2, torch.float32: 1e-5, torch.int32: 0.0}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a short sweep (small shapes, fewer iterations)")
    p.add_argument("--shapes", default="", help="comma-separated MxN list for the sweep (default: built in)")
    p.add_argument("--dtypes", default="bf16,fp16,fp32,int32", help="comma-separated: bf16,fp16,fp32,int32")
    p.add_argument("--iters", type=int, default=20, help="timed calls per measurement")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before each measurement")
    p.add_argument("--rounds", type=int, default=1,
                   help="measurements of each path, in turn (the table shows the median of the slowest rank's, "
                        "a line below the spread and NCCL's time over each path's; with more than one, the "
                        "unregistered calls are timed after the caller's copy is registered too)")
    p.add_argument("--overhead-calls", type=int, default=2000, help="calls of the host-overhead measurement")
    p.add_argument("--no-sweep", action="store_true", help="only the seed check and the host overhead")
    p.add_argument("--engine", default="auto", choices=("auto", "pull"),
                   help="the sweep's engine; pull also times calls on rows written into rs.input(m) (zero copy) "
                        "and on the caller's tensor registered (rs.register(x): read in place)")
    return p.parse_args()


class Job:
    """This rank's view of the torchrun job."""

    def __init__(self):
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            if name not in os.environ:
                raise SystemExit("check_rs: run under torchrun: torchrun --nproc-per-node N benchmarks/torch/check_rs.py")
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.local_rank = int(os.environ["LOCAL_RANK"])
        # torch owns the CUDA context first; hiercoll joins it (primary context).
        torch.cuda.set_device(self.local_rank)
        self.device = torch.device("cuda", self.local_rank)
        try:
            dist.init_process_group("nccl", device_id=self.device)
        except TypeError:  # torch < 2.3: no device_id
            dist.init_process_group("nccl")
        torch.zeros(1, device=self.device)  # the context exists before hiercoll's
        self.hc = hiercoll.init()
        if (self.hc.rank, self.hc.size, self.hc.device_index) != (self.rank, self.world, self.local_rank):
            raise SystemExit(f"check_rs: hiercoll sees {self.hc}; torch has rank {self.rank} of {self.world} "
                             f"on cuda:{self.local_rank} (HIERCOLL_DEVICE?)")
        self.failures = 0

    def log(self, *a):
        if self.rank == 0:
            print(*a, flush=True)

    def barrier(self):
        t = torch.zeros(1, device=self.device)
        dist.all_reduce(t)
        torch.cuda.synchronize()

    def all_ok(self, ok):
        """True when ok holds on every rank (so every rank takes the same path)."""
        t = torch.tensor([0 if ok else 1], device=self.device, dtype=torch.int32)
        dist.all_reduce(t)
        return int(t.item()) == 0

    def max_over_ranks(self, values):
        t = torch.tensor(values, device=self.device, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()


def make_input(dtype, m, n, device, gen):
    if dtype == torch.int32:
        # Integer inputs, small enough that the sum of 1024 ranks stays in int32.
        return torch.randint(-(1 << 20), 1 << 20, (m, n), dtype=torch.int32, device=device, generator=gen)
    return torch.rand(m, n, dtype=dtype, device=device, generator=gen)


def compare(out, ref, dtype):
    """None if out matches ref within dtype's tolerance, else the message."""
    tol = TOLERANCE[dtype]
    try:
        torch.testing.assert_close(out, ref, atol=tol, rtol=tol)
    except AssertionError as e:
        return str(e).strip().splitlines()[0:6]
    if dtype == torch.int32 and not torch.equal(out, ref):
        return ["int32 results differ bit for bit"]
    return None


def seed_check(job):
    """The seed's check: M=8192, N=16384, bf16, torch.rand, against NCCL with atol=rtol=6e-2."""
    m, n = 8192, 16384
    gen = torch.Generator(device=job.device)
    gen.manual_seed(1234 + job.rank)
    x = torch.rand(m, n, dtype=torch.bfloat16, device=job.device, generator=gen)
    ref = torch.empty(m // job.world, n, dtype=torch.bfloat16, device=job.device)
    dist.reduce_scatter_tensor(ref, x)
    with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
        out = rs.reduce_scatter(x)
        torch.cuda.synchronize()
    msg = None
    try:
        torch.testing.assert_close(out, ref, atol=6e-2, rtol=6e-2)
    except AssertionError as e:
        msg = str(e)
    if msg:
        print(f"rank {job.rank}: seed check FAILED: {msg}", flush=True)
    ok = job.all_ok(msg is None)
    job.failures += 0 if ok else 1
    job.log(f"seed check (M={m}, N={n}, bf16, {job.world} ranks, assert_close atol=rtol=6e-2 vs NCCL): "
            f"{'ok' if ok else 'FAILED'}")
    del x, ref, out


def time_ms(job, fn, iters, warmup):
    """Median time per call of fn on the current stream (CUDA events), in ms."""
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    job.barrier()
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def default_shapes(world, quick):
    shapes = [(world, 1), (world, 7), (3 * world, 4099), (1024, 1024), (4096, 4096)]
    if not quick:
        shapes += [(8192, 8192), (8192, 16384)]
    return shapes


def parse_shapes(spec, world):
    shapes = []
    for item in spec.split(","):
        m, n = (int(v) for v in item.lower().split("x"))
        if m % world:
            raise SystemExit(f"check_rs: shape {item}: M={m} is not divisible by the world size {world}")
        shapes.append((m, n))
    return shapes


def sweep(job, args):
    shapes = parse_shapes(args.shapes, job.world) if args.shapes else default_shapes(job.world, args.quick)
    dtypes = [DTYPES[d.strip()] for d in args.dtypes.split(",") if d.strip()]
    iters, warmup = (5, 2) if args.quick else (args.iters, args.warmup)
    rounds = max(1, args.rounds)
    w = job.world
    job.log("")
    job.log(f"sweep: {w} ranks; times are the slowest rank's median of {iters} calls (CUDA events); "
            "err = max |x - fp64 reference|")
    job.log(f"engine {args.engine}" + ("; 'zero-copy' times calls on rows written into rs.input(m), "
                                       "'registered' calls on the caller's tensor registered with rs.register(x), "
                                       "'hiercoll' calls on the caller's tensor unregistered (copied in first)"
                                       if args.engine == "pull" else ""))
    head = (f"{'dtype':>6} {'M':>6} {'N':>6} {'MiB':>8} | {'hiercoll ms':>11} {'zero-copy':>9} {'registered':>10} "
            f"{'NCCL ms':>9} | {'hc busbw':>9} {'zc busbw':>9} {'reg busbw':>9} {'NCCL busbw':>10} | "
            f"{'hc err':>9} {'NCCL err':>9} | check")
    job.log(head)
    job.log("-" * len(head))
    gen = torch.Generator(device=job.device)
    for di, dtype in enumerate(dtypes):
        name = [k for k, v in DTYPES.items() if v == dtype][0]
        for m, n in shapes:
            gen.manual_seed((job.rank * 1_000_003 + m * 7919 + n * 31 + di) & 0x7FFFFFFF)
            x = make_input(dtype, m, n, job.device, gen)
            ref = torch.empty(m // w, n, dtype=dtype, device=job.device)
            out = torch.empty_like(ref)
            dist.reduce_scatter_tensor(ref, x)
            with hiercoll.ReduceScatter2D(m, n, dtype, engine=args.engine) as rs:
                rs.reduce_scatter(x, out)
                torch.cuda.synchronize()
                problem = compare(out, ref, dtype)
                xs = None
                poison = -1 if dtype == torch.int32 else float("nan")
                if args.engine == "pull":
                    xs = rs.input(m)
                    xs.copy_(x)
                    out.fill_(poison)
                    rs.reduce_scatter(xs, out)
                    torch.cuda.synchronize()
                    problem = problem or compare(out, ref, dtype)
                    xr = x.clone()  # registered below; one round times the unregistered calls before it
                    if rounds == 1:
                        t_hc = [time_ms(job, lambda: rs.reduce_scatter(x, out), iters, warmup)]
                    rs.register(xr)
                    out.fill_(poison)
                    rs.reduce_scatter(xr, out)
                    torch.cuda.synchronize()
                    problem = problem or compare(out, ref, dtype)
                errs = [0.0, 0.0]
                if dtype.is_floating_point:
                    x64 = x.double()
                    ref64 = torch.empty(m // w, n, dtype=torch.float64, device=job.device)
                    dist.reduce_scatter_tensor(ref64, x64)
                    errs = [(out.double() - ref64).abs().max().item(), (ref.double() - ref64).abs().max().item()]
                    del x64, ref64
                if problem:
                    print(f"rank {job.rank}: {name} [{m}, {n}] FAILED: {problem}", flush=True)
                ok = job.all_ok(problem is None)
                job.failures += 0 if ok else 1
                # Each round times the paths in turn; 0: a path this engine does not take.
                plain_in_rounds = xs is None or rounds > 1  # else timed once above, before registering
                if plain_in_rounds:
                    t_hc = []
                t_zc, t_reg, t_nccl = [], [], []
                for _ in range(rounds):
                    if plain_in_rounds:
                        t_hc.append(time_ms(job, lambda: rs.reduce_scatter(x, out), iters, warmup))
                    if xs is None:
                        t_reg.append(0.0)
                        t_zc.append(0.0)
                    else:
                        t_reg.append(time_ms(job, lambda: rs.reduce_scatter(xr, out), iters, warmup))
                        t_zc.append(time_ms(job, lambda: rs.reduce_scatter(xs, out), iters, warmup))
                    t_nccl.append(time_ms(job, lambda: dist.reduce_scatter_tensor(ref, x), iters, warmup))
                if xs is not None:
                    torch.cuda.synchronize()
                    rs.deregister(xr)
                    del xr
                del xs
            # The slowest rank's time of each measurement, then each path's median over the rounds.
            slowest = job.max_over_ranks(t_hc + t_zc + t_reg + t_nccl + errs)
            err_hc, err_nccl = slowest[-2:]
            per_path = [slowest[i * rounds:(i + 1) * rounds] for i in range(4)]
            t_hc, t_zc, t_reg, t_nccl = (statistics.median(v) for v in per_path)
            size = m * n * x.element_size()

            def busbw(t_ms):
                return "-" if w == 1 or t_ms <= 0 else f"{size / (t_ms * 1e-3) * (w - 1) / w / 1e9:9.1f}"

            zc = f"{t_zc:>9.4f}" if t_zc > 0 else f"{'-':>9}"
            reg = f"{t_reg:>10.4f}" if t_reg > 0 else f"{'-':>10}"
            job.log(f"{name:>6} {m:>6} {n:>6} {size / 2**20:>8.2f} | {t_hc:>11.4f} {zc} {reg} {t_nccl:>9.4f} | "
                    f"{busbw(t_hc):>9} {busbw(t_zc):>9} {busbw(t_reg):>9} {busbw(t_nccl):>10} | "
                    f"{err_hc:>9.2e} {err_nccl:>9.2e} | {'ok' if ok else 'FAILED'}")
            if rounds > 1:
                names = ("hiercoll", "zero-copy", "registered", "NCCL")
                spread = ", ".join(f"{nm} [{min(v):.4f}..{max(v):.4f}]" for nm, v in zip(names, per_path) if max(v) > 0)
                ratios = ", ".join(f"{nm} {t_nccl / t:.3f}" for nm, t in zip(names[:3], (t_hc, t_zc, t_reg)) if t > 0)
                job.log(f"{'':>30} spread (ms, {rounds} rounds): {spread}; NCCL / path: {ratios}")
            del x, ref, out


def overlap_check(job):
    """OverlapWithGEMM: a producer raises every destination's signal, then the call runs."""
    m, n = 4 * job.world, 1000
    gen = torch.Generator(device=job.device)
    gen.manual_seed(99 + job.rank)
    x = make_input(torch.int32, m, n, job.device, gen)
    ref = torch.empty(m // job.world, n, dtype=torch.int32, device=job.device)
    dist.reduce_scatter_tensor(ref, x)
    problem = None
    with hiercoll.ReduceScatter2D(m, n, torch.int32, overlap_with_gemm=True) as rs:
        for _ in range(3):
            for dest in rs.consumption_order():
                rs.raise_signal(dest)
            out = rs.reduce_scatter(x)
            torch.cuda.synchronize()
            problem = problem or compare(out, ref, torch.int32)
    ok = job.all_ok(problem is None)
    job.failures += 0 if ok else 1
    job.log(f"overlap_with_gemm (signals raised in consumption order, 3 calls, int32 bit-exact): "
            f"{'ok' if ok else 'FAILED'}")


def host_overhead(job, calls):
    """Host time per enqueue-only call: perf_counter around batches of calls on a tiny tensor."""
    m, n, batch = job.world, 8, 20
    x = torch.ones(m, n, dtype=torch.bfloat16, device=job.device)
    out = torch.empty(m // job.world, n, dtype=torch.bfloat16, device=job.device)
    raw_stream = torch.cuda.current_stream().cuda_stream
    with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
        cases = [
            ("rs.reduce_scatter(x, out)", lambda: rs.reduce_scatter(x, out)),
            ("rs.reduce_scatter(x)  (allocates out)", lambda: rs.reduce_scatter(x)),
            ("rs.reduce_scatter_ptr(...)  (ctypes + C ABI + Go enqueue)",
             lambda: rs.reduce_scatter_ptr(x.data_ptr(), m, out.data_ptr(), raw_stream)),
            ("dist.reduce_scatter_tensor(out, x)  (NCCL, for reference)",
             lambda: dist.reduce_scatter_tensor(out, x)),
        ]
        results = []
        for label, fn in cases:
            for _ in range(3 * batch):  # warm up (wrappers cached, allocator primed)
                fn()
            job.barrier()
            per_call = []
            for _ in range(max(1, calls // batch)):
                t0 = time.perf_counter()
                for _ in range(batch):
                    fn()
                t1 = time.perf_counter()
                torch.cuda.synchronize()  # outside the timed part: queues stay short
                per_call.append((t1 - t0) / batch * 1e6)
            results.append((label, statistics.median(per_call)))
        torch.cuda.synchronize()
    worst = job.max_over_ranks([us for _, us in results])
    job.log("")
    job.log(f"host-side cost per call, bf16 [{m}, {n}] (µs; median over batches of {batch}, slowest rank):")
    for (label, _), us in zip(results, worst):
        job.log(f"  {label:<62} {us:8.2f}")


def main():
    args = parse_args()
    job = Job()
    job.log(f"hiercoll {hiercoll.__version__} ({hiercoll.library_path()}), torch {torch.__version__}, "
            f"{job.world} ranks, {torch.cuda.get_device_name(job.device)}")
    # An exception ends the process without the collective teardown below: the other ranks
    # may be inside a collective, and their own bounded waits report it.
    seed_check(job)
    overlap_check(job)
    if not args.no_sweep:
        sweep(job, args)
    host_overhead(job, args.overhead_calls)
    job.barrier()
    dist.destroy_process_group()
    hiercoll.finalize()
    job.log("")
    job.log("all checks passed" if job.failures == 0 else f"{job.failures} check(s) FAILED")
    return 1 if job.failures else 0


if __name__ == "__main__":
    sys.exit(main())
