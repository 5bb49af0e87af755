"""s40 run06: one fp8 row-wise GEMM path called a few times, for Nsight Compute: cublas (torch._scaled_mm, fast
accumulation) or own (hiercoll.gemm). Run from the repository root: python3 .s40-peer.py PATH MxNxK"""
import os, sys
import torch
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks", "torch"))
import gemm_fp8 as g  # noqa: E402
path, shape = sys.argv[1], sys.argv[2]
m, n, k = (int(x) for x in shape.split("x"))
dev = torch.device("cuda", 0)
torch.cuda.set_device(0)
a, w, a8, sa, w8, sw, _ = g.operands(1234, m, n, k, dev, "row")
if path == "own":
    import torch.distributed as dist
    dist.init_process_group("nccl")
    import hiercoll as hc
    hc.init()
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    f = lambda: hc.gemm(a8, w8.t(), sa, sw, out=c)
else:
    f = lambda: g.scaled_mm(a8, w8.t(), sa, sw, torch.bfloat16, True)
for _ in range(5):
    f()
torch.cuda.synchronize()
print(path, shape, "ok")
if path == "own":
    hc.finalize()
    dist.destroy_process_group()
