#!/usr/bin/env bash
# s44 run01 (one H200): st2, the fill timing pending since the forty-third session (light stamps in main's row-wise
# kernel, shapes with no stream-K wave); st2pf4, the same with the loader asking L2 for the fill four fills ahead
# (cp.async.bulk.prefetch.tensor); pf4 and pf8 timed against main by the A/B tool (C bit for bit). NVRTC 12.4
# here crashes compiling any L2 prefetch in the kernel, so the GPU's NVRTC 13 checks pf4 first.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run01.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/x/pf4.cu --nvrtc > $L/kc-pf4.txt 2>&1; echo "kc pf4 rc=$?"; tail -3 $L/kc-pf4.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
ab() {  # name variant: one A/B process
	local t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/x/$2.cu timeout 200 ../build/x/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1.txt 2>&1
	echo "$1 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|st2 |FAIL|differ|spill|panic|rror" $L/ab-$1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-230
}
HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584 ab st2 st2
HIERCOLL_GEMM_AB_ROUNDS=5 HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584 ab st2pf4 st2pf4
export HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
ab pf4-1 pf4; ab pf8-1 pf8; ab pf8-2 pf8; ab pf4-2 pf4
