#!/usr/bin/env bash
# s43 run11 (one H200): obs0, main with one more producer thread (warp 3's lane 0) that only waits for each fill to
# land, in turn (try_wait; no stamps, no stores): whether a thread waiting on the full barriers is what cost runs
# 07-10's observer a third of the kernel's speed. C bit for bit. One process.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run11.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584
cd gemm
t0=$SECONDS
HIERCOLL_GEMM_AB=../build/ab43/obs0.cu timeout 120 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-obs0-1.txt 2>&1
echo "obs0 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-obs0-1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
