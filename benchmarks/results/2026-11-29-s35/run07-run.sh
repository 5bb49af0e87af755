#!/usr/bin/env bash
# s35 run07 (one H200): exp/stmatrix (sm: the staging written with stmatrix, 16 stores a thread a tile instead of 64)
# against main's head (m35's device code; main's since differs by gm_desc_a only, SASS identical): kernel-check --nvcc
# on sm's gemm.cu; the GEMM GPU tests on sm; gemm_fp8.py row, tensor and block (4 shapes; its bf16 columns too),
# builds in turn, two processes each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((270 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
t0=$SECONDS; timeout 60 scripts/kernel-check.sh build/sm/gemm-sm.cu --nvcc > $L/kernel-check-sm.txt 2>&1; echo "kernel-check sm rc=$? $((SECONDS-t0))s"; grep -v " 0 spill stores" $L/kernel-check-sm.txt | tail -4 | cut -c1-160
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-sm timeout 100 ../build/sm/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/sm-gemm-gpu-tests.txt 2>&1); rc=$?
echo "sm gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/sm-gemm-gpu-tests.txt | head -6
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 25 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0
for b in sm m35 m35 sm; do i=$((i+1)); one tensor $b $S4 $i; done
for b in m35 sm sm m35; do i=$((i+1)); one row $b $S4 $i; done
for b in sm m35 m35 sm; do i=$((i+1)); one block $b $S4 $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
