#!/usr/bin/env bash
# s43 run08 (one H200): run07's fill timing again with the SM's clock (lat2): run07's global-timer reads slowed the
# kernel by 25-31%. Times in SM clocks; the observer reports only where there is no stream-K wave (the two shapes
# here). C bit for bit. One process.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run08.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=3
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584
cd gemm
t0=$SECONDS
HIERCOLL_GEMM_AB=../build/ab43/lat2.cu timeout 200 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-lat2-1.txt 2>&1
echo "lat2 rc=$? $((SECONDS-t0))s"; grep -E "^lat|built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-lat2-1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-250
