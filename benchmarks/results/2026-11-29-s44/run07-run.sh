#!/usr/bin/env bash
# s44 run07 (one H200): hs2, run03's hs with the storer taking consumer 1's half first and releasing its kept stage
# as soon as that half is read (hs released it after both halves): whether the next item's first fills, which hs
# made wait, then land in time. Timed against main by the A/B tool (C bit for bit), two processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run07.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,bf16:4096x8192x2048
ab hs2-1 hs2; ab hs2-2 hs2
