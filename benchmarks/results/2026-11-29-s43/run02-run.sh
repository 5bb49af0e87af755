#!/usr/bin/env bash
# s43 run02 (one H200): run01's mc with the consumers' arrivals on the peer's barriers plain (release at CTA scope,
# as a stage's release to the own loader): run01's release.cluster arrivals compiled to MEMBAR.ALL.GPU before each.
# The product is the built-in's bit for bit (the A/B tool checks it). Two processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run02.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
cd gemm
for i in 1 2; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/mc2.cu timeout 240 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-mc2-$i.txt 2>&1
	echo "mc2 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-mc2-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
