#!/usr/bin/env bash
# s44 run05 (one H200): pfw6 / pfw10, run02's L2 prefetch issued from another thread (warp 3's lane 0, which asks L2
# for each fill once the fill 6 / 10 before it has landed) instead of by the loader itself: whether run02's loss is
# the loader's issue (then level here) or the prefetches' own work in the TMA unit or L2 (then the same loss).
# Timed against main by the A/B tool (C bit for bit), in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
scripts/kernel-check.sh build/x/pfw6.cu --nvrtc > $L/kc-pfw6.txt 2>&1; echo "kc pfw6 rc=$?"; tail -1 $L/kc-pfw6.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
ab pfw6-1 pfw6; ab pfw10-1 pfw10; ab pfw10-2 pfw10; ab pfw6-2 pfw6
