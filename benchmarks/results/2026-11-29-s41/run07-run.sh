#!/usr/bin/env bash
# s41 run07 (one H200): block-wise dp (each k tile's fourth quarter drained as in main but promoted once the next
# k tile's first quarter is issued, so that its multiply-adds run beside those wgmmas; nothing in flight across the
# loop's back edge) against main, A/B tool, C bit for bit: seven small tails, then the five shapes, three processes;
# tensor:8192x8192x7168 the A/A control.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s41-run07.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab
cd gemm
HIERCOLL_GEMM_AB_ROUNDS=3 HIERCOLL_GEMM_AB_CASES=block:200x392x128,block:1000x1000x256,block:130x264x384,block:1030x2056x1280,block:777x1003x2000,block:8192x256x128,block:4096x8192x256 HIERCOLL_GEMM_AB=../build/ab40/dp.cu timeout 200 ../build/ab40/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-dp-tails.txt 2>&1
echo "tails rc=$?"; grep -E "built-in/variant|FAIL|differs|spill|Error" $L/ab-dp-tails.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-150
export HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_CASES=tensor:8192x8192x7168,block:4096x8192x2048,block:16384x4096x3584,block:8192x8192x7168,block:8192x8192x14336,block:8192x6144x7168
i=0
for v in dp dp dp; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab40/$v.cu timeout 200 ../build/ab40/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differs|spill" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | awk '{print $1, $(NF-1), $NF}'
done
