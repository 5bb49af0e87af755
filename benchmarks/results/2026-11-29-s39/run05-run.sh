#!/usr/bin/env bash
# s39 run05 (one H200): main's kernels (6b84217) launched in clusters of two (cl: __cluster_dims__(2,1,1), nothing
# else changed), the same with cluster-mates' walk indices half a grid apart (clr), and that remap alone without
# clusters (r), each against the built-in kernel by the A/B tool (C bit for bit), 10 rounds; cl, clr, r, cl.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=10 HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,tensor:8192x8192x7168,row:4096x8192x2048,row:16384x4096x3584,bf16:4096x8192x2048
cd gemm; i=0
for v in cl clr r cl; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab39/$v.cu timeout 100 ../build/ab39/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differs" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | awk '{print $1, $3, $5, $(NF-1), $NF}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
