#!/usr/bin/env bash
# s42 run01 (one H200): each whole tile's k tiles loaded from a rotated start, so that the CTAs sharing an operand
# tile do not read its same k tile at the same moment (per tensor, row-wise and bf16; block-wise and stream-K pieces
# unchanged). rotr: the start 1/8 of K apart by the tile's row in its group of 8; rotrc: 1/16 apart by the row in
# the group and the column tile's parity. The summation order changes, so the A/B tool runs unchecked (the product
# differs from the built-in's in its roundings); timed against main's built-in kernels call by call. Two processes
# each, rotrc rotr rotrc rotr.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s42-run01.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_UNCHECKED=1
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,bf16:4096x8192x2048
cd gemm; i=0
for v in rotrc rotr rotrc rotr; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab42/$v.cu timeout 240 ../build/ab42/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
