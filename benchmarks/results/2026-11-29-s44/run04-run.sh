#!/usr/bin/env bash
# s44 run04 (one H200): ds, consumer 1 stores its half of each tile from its registers (4-byte stores) while
# consumer 0's goes through the staging buffer and the storer's TMA stores as before: no half waits for the other
# (plain GEMM only). Timed against main by the A/B tool (C bit for bit) in two processes; st3ds, run02's st3 on top
# of ds: the waits on the full barriers.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
scripts/kernel-check.sh build/x/ds.cu --nvrtc > $L/kc-ds.txt 2>&1; echo "kc hs rc=$?"; tail -1 $L/kc-ds.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|st3 |FAIL|differ|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,bf16:4096x8192x2048
ab ds-1 ds
HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584 ab st3ds st3ds
ab ds-2 ds
