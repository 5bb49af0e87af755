#!/usr/bin/env bash
# s36 run07 (one H200): main with each item's first wgmma at scale-d 0 (sd0 landed): kernel-check --nvrtc and --nvcc
# on gemm/gemm.cu, the GEMM GPU tests, the CUDA backend's GEMM tests.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
timeout 90 scripts/kernel-check.sh --nvrtc > $L/kc-nvrtc.txt 2>&1; echo "nvrtc rc=$?"; tail -1 $L/kc-nvrtc.txt
timeout 90 scripts/kernel-check.sh --nvcc > $L/kc-nvcc.txt 2>&1; echo "nvcc rc=$?"; tail -1 $L/kc-nvcc.txt
t0=$SECONDS; (cd gemm && timeout 200 ../build/sd/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/gemm-gpu-tests.txt 2>&1); echo "gemm GPU tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)" $L/gemm-gpu-tests.txt | head
t0=$SECONDS; (cd device/cuda && timeout 120 ../../build/sd/device_cuda.test -test.v -test.count=1 -test.run 'Gemm|BLAS' -test.skip TestBLASAgainstFakeDriver > $L/cuda-gemm-tests.txt 2>&1); echo "cuda Gemm tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)" $L/cuda-gemm-tests.txt | head -20
cd $OUT && tar czf logs.tgz logs && rm -rf logs
