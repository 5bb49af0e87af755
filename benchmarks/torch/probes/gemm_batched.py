# Is one pointer-array batched GEMM (a batch per destination block) as fast as
# the whole GEMM? Compared with world separate GEMMs, interleaved rounds.
import ctypes, glob, os, statistics, torch
import nvidia
libdir = [p for p in glob.glob(os.path.join(os.path.dirname(nvidia.__path__[0] if hasattr(nvidia,'__path__') else nvidia.__file__), 'nvidia', 'cu13', 'lib'))] or glob.glob('/usr/local/lib/python3*/*-packages/nvidia/cu13/lib')
cands = glob.glob('/usr/local/lib/python3*/*-packages/nvidia/cu13/lib/libcublas.so.13') + glob.glob('/usr/lib/python3*/*-packages/nvidia/cu13/lib/libcublas.so.13') + glob.glob(os.path.join(os.path.dirname(torch.__file__), '..', 'nvidia', 'cu13', 'lib', 'libcublas.so.13'))
print("cublas:", cands[:1])
lib = ctypes.CDLL(cands[0])
torch.cuda.init(); torch.zeros(1, device="cuda")
h = ctypes.c_void_p()
assert lib.cublasCreate_v2(ctypes.byref(h)) == 0
alpha = ctypes.c_float(1.0); beta = ctypes.c_float(0.0)
def set_stream():
    lib.cublasSetStream_v2(h, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
def gemm_ex(m_rows, a, b, c, N, K):
    # row-major C[m,N] = A[m,K] B[K,N]  ->  column-major C^T = B^T A^T
    st = lib.cublasGemmEx(h, 0, 0, N, m_rows, K, ctypes.byref(alpha), ctypes.c_void_p(b.data_ptr()), 14, N,
        ctypes.c_void_p(a.data_ptr()), 14, K, ctypes.byref(beta), ctypes.c_void_p(c.data_ptr()), 14, N, 68, -1)
    assert st == 0, st
def gemm_batched(m_rows, aptrs, bptrs, cptrs, nb, N, K):
    st = lib.cublasGemmBatchedEx(h, 0, 0, N, m_rows, K, ctypes.byref(alpha), ctypes.c_void_p(bptrs.data_ptr()), 14, N,
        ctypes.c_void_p(aptrs.data_ptr()), 14, K, ctypes.byref(beta), ctypes.c_void_p(cptrs.data_ptr()), 14, N, nb, 68, -1)
    assert st == 0, st
def timeit(fn, iters=30):
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return ts
set_stream()
for (M, N, K, world) in [(8192,8192,7168,4),(8192,8192,2048,4),(4096,8192,7168,4),(8192,8192,14336,2)]:
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    c2 = torch.empty(M + 8 * world, N, device="cuda", dtype=torch.bfloat16)  # scattered C blocks, uneven gaps
    r = M // world
    aptrs = torch.tensor([a[i*r:].data_ptr() for i in range(world)], dtype=torch.int64, device="cuda")
    bptrs = torch.tensor([b.data_ptr()] * world, dtype=torch.int64, device="cuda")
    cptrs = torch.tensor([c2[i*r + 3*i:].data_ptr() for i in range(world)], dtype=torch.int64, device="cuda")
    variants = {
        "whole": lambda: gemm_ex(M, a, b, c, N, K),
        "blocks": lambda: [gemm_ex(r, a[i*r:], b, c[i*r:], N, K) for i in range(world)],
        "batched": lambda: gemm_batched(r, aptrs, bptrs, cptrs, world, N, K),
        "torch.mm": lambda: torch.mm(a, b, out=c),
    }
    for fn in variants.values():
        for _ in range(5): fn()
    torch.cuda.synchronize()
    # correctness of the batched path against torch
    gemm_batched(r, aptrs, bptrs, cptrs, world, N, K); torch.mm(a, b, out=c); torch.cuda.synchronize()
    err = max((c2[i*r+3*i:i*r+3*i+r].float() - c[i*r:(i+1)*r].float()).abs().max().item() for i in range(world))
    res = {k: [] for k in variants}
    for rnd in range(4):
        for k, fn in variants.items():
            res[k] += timeit(fn, 10)
    print(f"M={M} N={N} Klocal={K} world={world} (batched max diff vs mm {err:.3g}): " +
          "  ".join(f"{k}={statistics.median(v):.3f}/{min(v):.3f}" for k, v in res.items()), flush=True)
