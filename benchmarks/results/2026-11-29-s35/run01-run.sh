#!/usr/bin/env bash
# s35 run01 (one H200): exp/split-tail (st: each tile's last k tile in two n128 halves, the first half staged while
# the second's wgmmas run and the second half staged while the next tile's first k tile runs; each consumer its own
# 16 KiB staging slot, the halves in turn; the mainloop as n128 halves) against main's head e94c115 (m35): the GEMM
# GPU tests on st first; then gemm_fp8.py row, tensor and block (4 shapes), builds in turn; bench-mm bf16 each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((575 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-st timeout 200 ../build/st/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/st-gemm-gpu-tests.txt 2>&1); rc=$?
echo "st gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error|serial" $L/st-gemm-gpu-tests.txt | head -12
# timed either way: gemm_fp8.py checks every output against fp64 (--check-rows)
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 150 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0
for b in st m35 m35 st; do i=$((i+1)); one row $b $S4 $i; done
for b in m35 st st m35; do i=$((i+1)); one tensor $b $S4 $i; done
for b in st m35 m35 st; do i=$((i+1)); one block $b $S4 $i; done
for b in m35 st; do t0=$SECONDS
	[ $(left) -lt 90 ] && { echo "skip bench-mm $b"; continue; }
	HIERCOLL_CACHE_DIR=/tmp/c-$b timeout 80 build/$b/hiercoll bench-mm --layouts nk,kn > $L/mm-$b.txt 2>&1; echo "bench-mm $b rc=$? $((SECONDS-t0))s"; tail -12 $L/mm-$b.txt | cut -c1-150; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
