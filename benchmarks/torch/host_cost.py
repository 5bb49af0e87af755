#!/usr/bin/env python3
"""The host time of one hiercoll reduce-scatter call from Python, layer by layer.

    python3 benchmarks/torch/host_cost.py                       # one rank on GPU 0
    HIERCOLL_DEVICE=0 torchrun --nproc-per-node 2 benchmarks/torch/host_cost.py
    build/hiercoll bench --gpus 2 --host-cost --graphs off,on   # the Go path's own enqueue time

Enqueue-only calls on a tiny tensor ([world, 8] bf16), timed with time.perf_counter in batches,
the GPU drained between batches (outside the timed part); the median per call is printed for:

  ctypes floor      a ctypes call that does nothing (hc_abi_version): what any C ABI call costs
  C ABI call        hc_rs2d_reduce_scatter through ctypes with raw pointers and the stream
  C ABI, side       the same on a stream of its own instead of torch's default (legacy) stream
  Python, out=      ReduceScatter2D.reduce_scatter(x, out): checks, the stream, the call
  Python            ReduceScatter2D.reduce_scatter(x): the same, allocating the output

for a context without and with graphs=True, and beside them what torch itself costs on the same
host (the anchors): torch.empty of the output, and out.copy_(x) (one device-to-device copy, the
whole work of a one-rank call). The goal: at most 5 us per call from Python.

Then the own GEMM on a [128, 128] @ [128, 128] product (Hopper GPUs only): hc_gemm through ctypes
with raw pointers, hiercoll.gemm(a, b, out=c) in bf16, and in fp8 with row-wise scales, beside
torch.mm and torch._scaled_mm with the same operands.
"""

import ctypes
import os

for _name, _off in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_name, _off)

import pathlib  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

try:
    import hiercoll  # noqa: E402
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
    import hiercoll  # noqa: E402
from hiercoll import _lib  # noqa: E402

import torch  # noqa: E402

GOAL_US = 5.0


def median_per_call(fn, batch=50, rounds=40):
    for _ in range(batch):  # warm-up
        fn()
    per = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        per.append((time.perf_counter() - t0) / batch * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per)


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), HIERCOLL_PORT=str(port))
    device = int(os.environ.get("HIERCOLL_DEVICE", os.environ["LOCAL_RANK"])) % torch.cuda.device_count()
    torch.cuda.set_device(device)
    torch.zeros(1, device="cuda")
    w = hiercoll.init()
    lib = _lib.lib()
    m, n = w.size, 8
    x = torch.ones(m, n, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(1, n, dtype=torch.bfloat16, device="cuda")
    rows = []
    for graphs in (False, True):
        with hiercoll.ReduceScatter2D(m, n, torch.bfloat16, graphs=graphs) as rs:
            stream = torch.cuda.current_stream().cuda_stream
            side = torch.cuda.Stream().cuda_stream
            h, call = rs.handle, lib.hc_rs2d_reduce_scatter
            xp, op = x.data_ptr(), out.data_ptr()
            rows.append((graphs, {
                "ctypes floor": median_per_call(lib.hc_abi_version),
                "C ABI call": median_per_call(lambda: call(h, xp, m, op, stream)),
                "C ABI, side": median_per_call(lambda: call(h, xp, m, op, side)),
                "Python, out=": median_per_call(lambda: rs.reduce_scatter(x, out)),
                "Python": median_per_call(lambda: rs.reduce_scatter(x)),
            }))
    gemm_row = gemm_costs(w, lib)
    row = x[:1]
    anchors = {
        "torch.empty": median_per_call(lambda: torch.empty((1, n), dtype=torch.bfloat16, device="cuda")),
        "out.copy_(x)": median_per_call(lambda: out.copy_(row)),
    }
    if w.rank == 0:
        print(f"hiercoll host cost per call from Python, {w.size} rank(s) on {torch.cuda.get_device_name()}, "
              f"median us (goal: Python at most {GOAL_US} us)")
        print("  torch on this host:  " + "  ".join(f"{k} {v:6.2f}" for k, v in anchors.items()))
        for graphs, r in rows:
            cells = "  ".join(f"{k} {v:6.2f}" for k, v in r.items())
            verdict = "ok" if r["Python"] <= GOAL_US else "over the goal"
            print(f"  graphs={str(graphs):5}  {cells}  ({verdict})")
        if gemm_row:
            print("  own GEMM, 128x128x128:  " + "  ".join(f"{k} {v:6.2f}" for k, v in gemm_row.items()))
    hiercoll.finalize()


def gemm_costs(w, lib):
    """The own GEMM's host time per call, by layer, on a tiny product; {} off Hopper."""
    if torch.cuda.get_device_capability() != (9, 0):
        return {}
    d = 128
    a = torch.randn(d, d, dtype=torch.bfloat16, device="cuda")
    wt = torch.randn(d, d, dtype=torch.bfloat16, device="cuda").t()  # a Linear weight's transpose
    c = torch.empty(d, d, dtype=torch.bfloat16, device="cuda")
    a8, w8 = a.to(torch.float8_e4m3fn), wt.t().contiguous().to(torch.float8_e4m3fn)
    sa = torch.ones(d, 1, dtype=torch.float32, device="cuda")
    sw = torch.ones(1, d, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    h, ap, bp, cp = w.handle, a.data_ptr(), wt.data_ptr(), c.data_ptr()
    size = ctypes.c_int64()
    _lib.check(lib.hc_gemm_workspace_bytes(h, ctypes.byref(size)))
    ws = torch.zeros(size.value, dtype=torch.uint8, device="cuda")
    wsp = ws.data_ptr()

    def c_abi():
        return lib.hc_gemm(h, _lib.HC_BF16, ap, d, bp, d, _lib.HC_B_NK, 0, 0, _lib.HC_BF16, cp, d, d, d, d, wsp, stream)

    _lib.check(c_abi())  # timed below without the check: it must not be failing
    return {
        "C ABI bf16": median_per_call(c_abi),
        "Python bf16": median_per_call(lambda: hiercoll.gemm(a, wt, out=c)),
        "Python fp8 row": median_per_call(lambda: hiercoll.gemm(a8, w8.t(), sa, sw, out=c)),
        "torch.mm": median_per_call(lambda: torch.mm(a, wt, out=c)),
        "_scaled_mm row": median_per_call(
            lambda: torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)),
    }


if __name__ == "__main__":
    main()
