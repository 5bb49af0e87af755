#!/usr/bin/env bash
# s41 run05 (one H200): where the block-wise mainloop's time goes, in the kernel (A/B tool, unchecked: diagnostic
# variants whose product is wrong by design). np: main's quarters with one multiply-add of each promotion's 32 kept
# (the wgmma's result live); nw: no temporaries, no promotion, each quarter's n64 chain adding into its accumulators,
# one commit a k tile and one in flight (the per-tensor loop with n64 wgmmas). The per-tensor cases' built-in times
# are the n256 loop's in the same processes. Two processes each, np nw np nw.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s41-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_UNCHECKED=1
export HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,block:4096x8192x2048,tensor:16384x4096x3584,block:16384x4096x3584,tensor:8192x8192x7168,block:8192x8192x7168
cd gemm; i=0
for v in np nw np nw; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab40/$v.cu timeout 200 ../build/ab40/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL" $L/ab-$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
