#!/usr/bin/env bash
# Issue 29 on one H200 (or H100): fp8 with per-tensor, row-wise and block-wise
# scales. Run from the repository root on the GPU machine after
# scripts/gpu-build.sh and scripts/build-capi.sh built build/ elsewhere (it
# needs build/gemm.test, build/hiercoll and build/libhiercoll.so); logs go to
# $OUT (default ./gpu-out), one file per step, a summary in $OUT/summary.txt.
# About 4-5 minutes; each step is bounded (STEP_TIMEOUT, default 150 s).
#   1. every GEMM kernel (the 8 new ones among them) compiles with NVRTC for
#      sm_90a into the kernel cache, loads, and keeps its accumulators in
#      registers (no local memory; registers per kernel in the log); then
#      the fp8 kernels of each scaling against fp64 at every tail, stream-K
#      included (gemm.test TestGemmScalingsOnGPU);
#   2. the Python tests of fp8 (test_hiercoll.py -k fp8: each scaling in
#      torch's layouts, exact results, the shape errors);
#   3. hiercoll.gemm beside torch._scaled_mm with the same scaling at the
#      issue's four shapes (gemm_fp8.py, checked against fp64 first);
#   4. ReduceScatter2D.scaled_matmul_reduce_scatter on 2 ranks sharing the
#      GPU, checked against fp64 (no timing: NCCL refuses shared GPUs);
#   5. bench-gemm --input e4m3 --scaling ... on one rank (the Go gemmrs
#      path, checked against fp64).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export HIERCOLL_LIB=${HIERCOLL_LIB:-$PWD/build/libhiercoll.so} PYTHONPATH=$PWD/python
H=build/hiercoll
T=${STEP_TIMEOUT:-150}
SHAPES=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
date -u +"run at %Y-%m-%dT%H:%M:%SZ" | tee "$OUT/when.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >>"$OUT/when.txt" 2>&1
step gemm-scalings timeout "$T" build/gemm.test -test.v -test.count=1 -test.run TestGemmScalingsOnGPU
step py-fp8 timeout "$T" python3 -m pytest -q python/tests/test_hiercoll.py -k fp8
for sc in tensor row block; do
	step "fp8-gemm-$sc" timeout "$T" torchrun --nproc-per-node 1 benchmarks/torch/gemm_fp8.py --scaling "$sc" \
		--shapes "$SHAPES" --rounds 3 --iters 10
done
for sc in tensor row block; do
	step "fp8-rs-shared-$sc" env HIERCOLL_DEVICE=0 timeout "$T" torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling "$sc" --shapes 2048x8192x8192,1000x2056x4224 --rounds 3
done
for sc in tensor row block; do
	step "bench-gemm-$sc" timeout "$T" $H bench-gemm --nodes 1 --gpus 1 --input e4m3 --scaling "$sc" \
		--shapes 4096x8192x7168 --reps 3 --iters 10
done
{
	grep -h "registers" "$OUT/gemm-scalings.txt"
	grep -hE "^(--- |ok|FAIL|PASS)" "$OUT/gemm-scalings.txt"
	tail -n 3 "$OUT/py-fp8.txt"
	grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|n/a|Error" "$OUT"/fp8-*.txt
	grep -hE "^[0-9]+x[0-9]+x[0-9]+ |error" "$OUT"/bench-gemm-*.txt
} >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
exit $status
