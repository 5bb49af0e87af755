#!/usr/bin/env bash
# s43 run03 (one H200): what run02's mc2 costs without its multicast, and the multicast at every shape. cl: main's
# kernels launched in clusters of two, nothing else (the thirty-ninth session's cl, never timed block-wise); mc3: mc2
# coupled wherever the pair's whole tiles agree (an even number of them; mc2 coupled only where they were a multiple
# of the grid, i.e. not at 4096x8192x2048 nor 16384x4096x3584, which have no stream-K wave), the peer's barrier
# address mapped once. The products are the built-in's bit for bit (the A/B tool checks them).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
cd gemm
i=0
for v in cl mc3 mc3 cl; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/$v.cu timeout 240 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
