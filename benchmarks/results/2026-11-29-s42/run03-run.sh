#!/usr/bin/env bash
# s42 run03 (one H200): the loaders of all CTAs meet before each whole tile's loads (a grid barrier of the producer
# threads alone, self-resetting, on the variant module's own counters), so that the CTAs that share an operand tile
# start reading it together (run01: reading apart costs 2.5-24%). The product is the built-in's bit for bit (the
# A/B tool checks it). Three processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s42-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,block:4096x8192x2048,block:8192x8192x7168,bf16:4096x8192x2048
cd gemm
for i in 1 2 3; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab42/sync.cu timeout 240 ../build/ab42/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-sync-$i.txt 2>&1
	echo "sync rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ" $L/ab-sync-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
