#!/usr/bin/env bash
# s43 run07 (one H200): how long a stage's fill takes. lat (diagnostic, C bit for bit): main with the global timer read
# when the loader issues each fill, when it lands (an observer thread spinning on each full barrier in turn) and when
# consumer 0 comes to wait for it; per CTA the last call's steady-state fills (an item's fifth k tile on) summed in a
# module global, printed by the variant's hc_ab_report kernel, which the A/B tool (gemm.test built at this session's
# head, with that hook) launches after each case. Row-wise kernel only. One process.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run07.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=3
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168
cd gemm
t0=$SECONDS
HIERCOLL_GEMM_AB=../build/ab43/lat.cu timeout 200 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-lat-1.txt 2>&1
echo "lat rc=$? $((SECONDS-t0))s"; grep -E "^lat|built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-lat-1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-250
