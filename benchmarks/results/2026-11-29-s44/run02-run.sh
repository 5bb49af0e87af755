#!/usr/bin/env bash
# s44 run02 (one H200): st3, run01's st2 with both consumers stamped (thread 0 of each) and every wait kept: a
# histogram of the waits on the full barriers, the items' first four fills apart; pfk4 / pfk8, the loader asking L2
# for the item's k tile four / eight fills ahead (no second cursor: run01's pf4 / pf8 spilled in the loader's 40
# registers), timed against main by the A/B tool (C bit for bit), in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run02.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
scripts/kernel-check.sh build/x/pfk4.cu --nvrtc > $L/kc-pfk4.txt 2>&1; echo "kc pfk4 rc=$?"; tail -1 $L/kc-pfk4.txt
scripts/kernel-check.sh build/x/st3.cu --nvrtc > $L/kc-st3.txt 2>&1; echo "kc st3 rc=$?"; tail -1 $L/kc-st3.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|st3 |FAIL|differ|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584 ab st3 st3
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
ab pfk4-1 pfk4; ab pfk8-1 pfk8; ab pfk8-2 pfk8; ab pfk4-2 pfk4
