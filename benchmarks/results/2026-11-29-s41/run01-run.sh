#!/usr/bin/env bash
# s41 run01 (one H200): block-wise halves through one temporary (h1: per k tile two m64n128 chains into one
# 64-register temporary, wait_group 0 and promote each) against main's quarters, A/B tool, two processes;
# tensor:8192x8192x7168 as the A/A control (its kernel is the built-in's).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s41-run01.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_CASES=tensor:8192x8192x7168,block:4096x8192x2048,block:16384x4096x3584,block:8192x8192x7168,block:8192x8192x14336,block:8192x6144x7168
cd gemm; i=0
for v in h1 h1; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab40/$v.cu timeout 240 ../build/ab40/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differs|spill" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | awk '{print $1, $(NF-1), $NF}'
done
