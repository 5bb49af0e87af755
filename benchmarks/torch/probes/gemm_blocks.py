#!/usr/bin/env python3
"""One GPU: how much slower is a GEMM computed as row blocks than whole, and does the algorithm choice explain it?

    python gemm_blocks.py [--blas cublas|cublaslt] [--shapes MxNxK_local/blocks,...]

For each shape: the whole mm, the same product as `blocks` row blocks back to back (torch.mm with out=),
and single mm calls of every multiple of the block height; with --rounds, whole / blocks / blocks
alternating over two streams, measured in turn. Random bf16 data (the power draw, and so the
clock, depends on it). CUDA events around --iters calls, best of --reps.
"""
import argparse
import os

import torch


def timed(fn, iters, reps):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / iters)
    return best * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blas", default="cublas")
    ap.add_argument("--shapes", default="8192x8192x7168/4,8192x8192x2048/4,4096x8192x7168/4,8192x8192x14336/2")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=0, help="(added later) rounds of whole / blocks / blocks on two streams, in turn")
    args = ap.parse_args()
    torch.backends.cuda.preferred_blas_library(args.blas)
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    print(f"blas={args.blas} tunableop={os.environ.get('PYTORCH_TUNABLEOP_ENABLED', '0')} device={torch.cuda.get_device_name()}")
    for spec in args.shapes.split(","):
        dims, blocks = spec.split("/")
        m, n, k = (int(x) for x in dims.split("x"))
        blocks = int(blocks)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        h = m // blocks
        whole = timed(lambda: torch.mm(a, b, out=out), args.iters, args.reps)

        def in_blocks():
            for i in range(blocks):
                torch.mm(a[i * h:(i + 1) * h], b, out=out[i * h:(i + 1) * h])

        blk = timed(in_blocks, args.iters, args.reps)
        streams = [torch.cuda.Stream() for _ in range(2)]
        main_s = torch.cuda.current_stream()

        def in_blocks_two_streams():
            # block i on stream i % 2 (as async-TP alternates its chunk GEMMs): a block may start
            # in the previous block's tail
            for st in streams:
                st.wait_stream(main_s)
            for i in range(blocks):
                with torch.cuda.stream(streams[i % 2]):
                    torch.mm(a[i * h:(i + 1) * h], b, out=out[i * h:(i + 1) * h])
            for st in streams:
                main_s.wait_stream(st)

        flops = 2.0 * m * n * k
        line = f"{m}x{n}x{k} whole {whole:8.1f} us ({flops / whole / 1e6:6.1f} TFLOP/s) | {blocks} blocks {blk:8.1f} us ({blk / whole:5.3f}x)"
        for _ in range(args.rounds):
            w = timed(lambda: torch.mm(a, b, out=out), args.iters, args.reps)
            b1 = timed(in_blocks, args.iters, args.reps)
            b2 = timed(in_blocks_two_streams, args.iters, args.reps)
            line += f" | round: whole {w:7.1f} blocks {b1:7.1f} ({b1 / w:5.3f}x) two streams {b2:7.1f} ({b2 / w:5.3f}x)"
        singles = []
        for j in range(1, blocks):
            rows = j * h
            t = timed(lambda: torch.mm(a[:rows], b, out=out[:rows]), args.iters, args.reps)
            singles.append(f"M={rows} {t:7.1f} us ({t / whole * m / rows:5.3f}x pro rata)")
        print(line + " | " + " | ".join(singles), flush=True)


if __name__ == "__main__":
    main()
