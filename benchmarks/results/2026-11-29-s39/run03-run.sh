#!/usr/bin/env bash
# s39 run03 (one H200): the consumers out of phase. Variants of main's gemm.cu (6b84217) in which consumer 1 starts
# its first item 1000 / 2000 / 4000 clocks after consumer 0 (o1, o2, o4; non-block mainloop only), timed by the A/B
# tool against the built-in kernel (C bit for bit), per tensor, row-wise and bf16, 15 rounds; o1, o2, o4, o2.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=15 HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,tensor:16384x4096x3584,tensor:8192x8192x7168,row:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,bf16:4096x8192x2048,bf16:16384x4096x3584
cd gemm; i=0
for v in o1 o2 o4 o2; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab39/$v.cu timeout 120 ../build/ab39/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differs" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | awk '{print $1, $(NF-1), $NF}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
