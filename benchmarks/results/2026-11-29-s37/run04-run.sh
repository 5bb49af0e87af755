#!/usr/bin/env bash
# s37 run04 (one H200): w0 (the per-tensor, row-wise and bf16 mainloops release each stage once its own wgmmas are
# done, wait_group 0, instead of the stage before it after wait_group 1: each consumer holds one stage instead of
# two, so the loader has three in flight instead of two) against main with the A/B tool; kernel-check --nvrtc on w0
# first (the library's NVRTC 13.0). Order: w0, main (A/A), w0.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/ab/w0.cu --nvrtc > $L/kc-nvrtc-w0.txt 2>&1; echo "kc w0 rc=$?"; tail -1 $L/kc-nvrtc-w0.txt
cd gemm
i=0
for v in w0 main w0; do
	i=$((i+1)); t0=$SECONDS
	[ $SECONDS -gt 450 ] && { echo "skip $v"; continue; }
	HIERCOLL_GEMM_AB=../build/ab/$v.cu timeout 150 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "== $v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-$v-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
