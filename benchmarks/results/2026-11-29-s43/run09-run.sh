#!/usr/bin/env bash
# s43 run09 (one H200): what slowed run07/run08's instrumented kernel by a quarter. obs: lat2's observer thread alone
# (spinning on each full barrier in turn, stamping landings; no loader or consumer stamps); stamps: lat2's loader and
# consumer stamps alone (no observer). C bit for bit; the report lines of obs are meaningless (nothing to subtract).
# One process each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run09.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=5
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584
cd gemm
for v in obs stamps; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/$v.cu timeout 200 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-1.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-$v-1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
