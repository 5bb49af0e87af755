#!/usr/bin/env bash
# s36 run05 (one H200): the A/B tool (gemm.test's TestGemmABOnGPU, one process, built-in and variant interleaved call
# by call, C compared bit for bit): main's own gemm.cu as the variant (A/A: the method's noise floor), then sd0 (each
# item's first wgmma with scale-d 0 instead of zeroing the accumulators), x4b (stmatrix staging), A/A again.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
cd gemm
i=0
for v in main sd0 x4b main; do
	i=$((i+1)); t0=$SECONDS
	[ $SECONDS -gt 480 ] && { echo "skip $v"; continue; }
	HIERCOLL_GEMM_AB=../build/ab/$v.cu timeout 150 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "== $v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-$v-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
