"""s13 run05 probe (2 GPUs): rank 1 calls with the context's symmetric input (rs.input, zero copy), rank 0
with a tensor of its own: at 8 MiB per rank (copied in whole: allowed, checked against NCCL) and at 1 GiB
(rank 1's block pulled by the copy engine, rank 0's copied in pieces: the first handshake must stop both
ranks, where before b281821 both waited)."""
import os
for k, v in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(k, v)
import sys, time
sys.path.insert(0, "python")
import torch
import torch.distributed as dist
import hiercoll

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(rank)
n = 4096
for mib in (8, 1024):
    m = mib * 2**20 // (2 * n) // world * world
    torch.manual_seed(rank)
    x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
    out = torch.empty(m // world, n, dtype=torch.bfloat16, device="cuda")
    ref = torch.empty_like(out)
    dist.reduce_scatter_tensor(ref, x)
    torch.cuda.synchronize()
    with hiercoll.ReduceScatter2D(m, n, torch.bfloat16) as rs:
        inp = x
        if rank == 1:
            inp = rs.input(m)
            inp.copy_(x)
        t0 = time.time()
        try:
            out.fill_(float("nan"))
            rs.reduce_scatter(inp, out)
            torch.cuda.synchronize()
        except Exception as e:  # the expected end at 1 GiB
            print(f"rank {rank} {mib} MiB: {type(e).__name__} after {time.time() - t0:.1f} s: {str(e)[:240]}", flush=True)
            os._exit(3)
        err = (out.float() - ref.float()).abs().max().item()
        print(f"rank {rank} {mib} MiB: ok, max |hiercoll - NCCL| {err:.4g}", flush=True)
