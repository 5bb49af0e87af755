#!/usr/bin/env bash
# s41 run06 (one H200): nwa, the diagnostic nw of run05 with A from registers (ldmatrix once per k tile into one of
# two fragment sets in turn, so that no k tile waits for the one before), A/B tool unchecked: whether the n64 chains'
# cost against the n256 loop (the per-tensor cases' built-in times) is A's re-reads from shared memory. nwa nw nwa.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s41-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_UNCHECKED=1
export HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,block:4096x8192x2048,tensor:16384x4096x3584,block:16384x4096x3584,tensor:8192x8192x7168,block:8192x8192x7168
cd gemm; i=0
for v in nwa nw nwa; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab40/$v.cu timeout 200 ../build/ab40/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
