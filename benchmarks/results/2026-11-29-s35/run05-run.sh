#!/usr/bin/env bash
# s35 run05 (one H200): exp/half-turns (ht: the consumers take the staging buffer in turn a 128-column half at a
# time, so that consumer 1 starts once half of consumer 0's rows are read, not all) against main's head (m35):
# kernel-check --nvcc on ht's gemm.cu; the GEMM GPU tests on ht; gemm_fp8.py row, tensor and block (4 shapes),
# builds in turn, two processes each; bench-mm bf16 each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((575 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
t0=$SECONDS; timeout 120 scripts/kernel-check.sh build/ht/gemm-ht.cu --nvcc > $L/kernel-check-ht.txt 2>&1; echo "kernel-check ht rc=$? $((SECONDS-t0))s"; grep -v " 0 spill stores" $L/kernel-check-ht.txt | tail -5 | cut -c1-160
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-ht timeout 200 ../build/ht/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/ht-gemm-gpu-tests.txt 2>&1); rc=$?
echo "ht gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/ht-gemm-gpu-tests.txt | head -8
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 150 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0
for b in ht m35 m35 ht; do i=$((i+1)); one row $b $S4 $i; done
for b in m35 ht ht m35; do i=$((i+1)); one tensor $b $S4 $i; done
for b in ht m35 m35 ht; do i=$((i+1)); one block $b $S4 $i; done
for b in m35 ht; do t0=$SECONDS
	[ $(left) -lt 90 ] && { echo "skip bench-mm $b"; continue; }
	HIERCOLL_CACHE_DIR=/tmp/c-$b timeout 85 build/$b/hiercoll bench-mm --layouts nk,kn > $L/mm-$b.txt 2>&1; echo "bench-mm $b rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/mm-$b.txt | cut -c1-20,120-150; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
