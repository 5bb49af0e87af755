import torch, statistics, sys
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
dev = torch.device("cuda")
def timeit(fn, iters=40, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)
for (M, N, K, world) in [(8192,8192,7168,4),(8192,8192,2048,4),(4096,8192,7168,4),(8192,8192,14336,2)]:
    a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    main = torch.cuda.current_stream()
    streams = [torch.cuda.Stream() for _ in range(8)]
    def whole():
        torch.mm(a, b, out=c)
    def blocked(nblk, nstr):
        r = M // nblk
        def f():
            ev = torch.cuda.Event(); ev.record(main)
            for s in streams[:nstr]: s.wait_event(ev)
            for i in range(nblk):
                s = streams[i % nstr]
                with torch.cuda.stream(s):
                    torch.mm(a[i*r:(i+1)*r], b, out=c[i*r:(i+1)*r])
            for s in streams[:nstr]:
                e2 = torch.cuda.Event(); e2.record(s); main.wait_event(e2)
        return f
    res = {"whole": timeit(whole)}
    for nblk in (world, 2*world):
        for nstr in (1, 2, 3, 4):
            if nstr <= nblk:
                res[f"{nblk}blk/{nstr}str"] = timeit(blocked(nblk, nstr))
    print(f"M={M} N={N} Klocal={K} world={world}: " + "  ".join(f"{k}={v:.3f}" for k, v in res.items()), flush=True)
