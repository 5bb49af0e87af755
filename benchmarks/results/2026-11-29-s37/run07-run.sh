#!/usr/bin/env bash
# s37 run07 (one H200): rp (the row-wise column scales laid out so that each thread reads its four columns with one
# 16-byte shared load, 16 loads a tile instead of 32 of 8 bytes) against main with the A/B tool, row-wise at three
# shapes and per tensor at one (unchanged: a control), 15 rounds, twice; kernel-check --nvrtc on rp first, then
# rp's GEMM GPU tests (gemm-rp.test, built from rp: every row-wise tail and the no-local-memory check).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run07.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/ab/rp.cu --nvrtc > $L/kc-nvrtc-rp.txt 2>&1; echo "kc rp rc=$?"; tail -1 $L/kc-nvrtc-rp.txt
cd gemm
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,tensor:4096x8192x2048 HIERCOLL_GEMM_AB_ROUNDS=15
for i in 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab/rp.cu timeout 100 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-rp-$i.txt 2>&1
	echo "== rp $i rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-rp-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
unset HIERCOLL_GEMM_AB_CASES HIERCOLL_GEMM_AB_ROUNDS
t0=$SECONDS; timeout 150 ../build/ab/gemm-rp.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/rp-gemm-gpu-tests.txt 2>&1
echo "rp gemm tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/rp-gemm-gpu-tests.txt | head
cd $OUT && tar czf logs.tgz logs && rm -rf logs
