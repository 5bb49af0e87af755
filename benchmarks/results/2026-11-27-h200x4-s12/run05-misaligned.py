"""s12 run05 probe: the pull engine on the caller's unregistered input at a 16-byte-aligned
and at a 2-byte-offset base (a view one element into a bf16 buffer), beside NCCL on the same
views; 4 ranks, N = 4096, 128 / 256 / 512 MiB per rank; ms, median of 20 calls, slowest rank,
3 rounds in turn. Checks first: int32 at 128 MiB bit for bit against NCCL at both bases and
with rank 1 alone at the offset base (mixed); bf16 against NCCL. The library is HIERCOLL_LIB's."""
import os
for k, v in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(k, v)
import statistics, sys
sys.path.insert(0, "python")
import torch
import torch.distributed as dist
import hiercoll

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(rank)


def time_ms(fn, iters=20, warmup=5):
    for _ in range(warmup):
        fn()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    dist.barrier()
    for s, e in zip(st, en):
        s.record(); fn(); e.record()
    torch.cuda.synchronize()
    t = torch.tensor([statistics.median(s.elapsed_time(e) for s, e in zip(st, en))], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


n = 4096
m = 128 * 2**20 // (4 * n) // world * world
flat = torch.randint(-1000, 1000, (m * n + 16,), dtype=torch.int32, device="cuda")
out = torch.empty(m // world, n, dtype=torch.int32, device="cuda")
ref = torch.empty_like(out)
with hiercoll.ReduceScatter2D(m, n, torch.int32) as rs:
    for name, off in (("aligned", 4), ("offset4", 1), ("mixed", 1 if rank == 1 else 4)):
        x = flat[off:off + m * n].view(m, n)
        for _ in range(3):
            out.fill_(-1)
            rs.reduce_scatter(x, out)
            dist.reduce_scatter_tensor(ref, x)
            torch.cuda.synchronize()
        bad = torch.tensor([int((out != ref).sum().item())], device="cuda")
        dist.all_reduce(bad)
        if rank == 0:
            print(f"int32 128 MiB {name}: elements differing from NCCL {bad.item()}", flush=True)
del flat, out, ref
for mib in (128, 256, 512):
    m = mib * 2**20 // (2 * n) // world * world
    flat = torch.randn(m * n + 64, device="cuda").to(torch.bfloat16)
    views = {"aligned": flat[8:8 + m * n].view(m, n), "offset2": flat[1:1 + m * n].view(m, n)}
    out = torch.empty(m // world, n, dtype=torch.bfloat16, device="cuda")
    ref = torch.empty_like(out)
    with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
        for name, x in views.items():
            out.fill_(float("nan"))
            rs.reduce_scatter(x, out)
            dist.reduce_scatter_tensor(ref, x)
            torch.cuda.synchronize()
            err = torch.tensor([(out.float() - ref.float()).abs().max().item()], device="cuda")
            dist.all_reduce(err, op=dist.ReduceOp.MAX)
            if rank == 0:
                print(f"{mib} MiB {name}: base % 16 = {x.data_ptr() % 16}, max |hiercoll - NCCL| {err.item():.4g}", flush=True)
        res = {k: [] for k in ("aligned", "offset2", "nccl aligned", "nccl offset2")}
        for _ in range(3):
            for name, x in views.items():
                res[name].append(time_ms(lambda: rs.reduce_scatter(x, out)))
                res["nccl " + name].append(time_ms(lambda: dist.reduce_scatter_tensor(ref, x)))
        if rank == 0:
            print(f"{mib} MiB: " + "; ".join(f"{k} {statistics.median(v):.4f} [{min(v):.4f}..{max(v):.4f}]" for k, v in res.items()), flush=True)
    del flat, views, out, ref
    torch.cuda.empty_cache()
dist.destroy_process_group()
