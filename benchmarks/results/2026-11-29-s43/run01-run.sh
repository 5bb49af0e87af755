#!/usr/bin/env bash
# s43 run01 (one H200): main's cooperative kernel in clusters of two whose CTAs walk the same column tiles and share
# B by TMA multicast (stage s's B loaded into both CTAs by rank s & 1; a stage refilled once both CTAs' consumers
# released it), cuBLAS's clustered kernels' one structural difference not yet tried on main's kernel. The product is
# the built-in's bit for bit (the A/B tool checks it). Two processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run01.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
cd gemm
for i in 1 2; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/mc.cu timeout 240 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-mc-$i.txt 2>&1
	echo "mc rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-mc-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
