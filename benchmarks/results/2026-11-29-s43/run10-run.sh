#!/usr/bin/env bash
# s43 run10 (one H200): is it the observer's blocking wait? obss: run09's obs with the observer polling each full
# barrier by mbarrier.test_wait and __nanosleep(64) instead of try_wait. cws: main with the consumers' full-barrier
# wait polled the same way (test_wait, __nanosleep(32)): if a thread blocked in try_wait on a barrier whose TMA bytes
# are in flight slows their landing, the consumers' own waits for late stages do too. C bit for bit. One process each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run10.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=5
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584
cd gemm
for v in obss cws; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/$v.cu timeout 150 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-1.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-$v-1.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
