#!/usr/bin/env bash
# s44 run03 (one H200): hs, each tile's two halves staged at once: consumer 0's into the staging buffer, consumer
# 1's into the B half of its last k tile's stage, which it keeps until the storer has read it (the storer releases
# it for consumer 1's warps); the consumers meet before staging (plain GEMM only: a summed tile as before;
# block-wise unchanged). Timed against main by the A/B tool (C bit for bit) in two processes; st3hs, run02's st3
# on top of hs: the waits on the full barriers with the halves staged at once.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
scripts/kernel-check.sh build/x/hs.cu --nvrtc > $L/kc-hs.txt 2>&1; echo "kc hs rc=$?"; tail -1 $L/kc-hs.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|st3 |FAIL|differ|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,bf16:4096x8192x2048
ab hs-1 hs
HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584 ab st3hs st3hs
ab hs-2 hs
