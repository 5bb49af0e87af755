#!/usr/bin/env bash
# s17 run09 (2 GPUs): issue 30's seven shapes, bench-gemm --gemm own --reps 5 at 77f8f7f (s17f).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
t0=$SECONDS
timeout 300 build/s17f/hiercoll bench-gemm --gemm own --reps 5 --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 > $L/seven.txt 2>&1
echo "seven rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/seven.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs && rm -rf logs
