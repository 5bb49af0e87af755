#!/usr/bin/env bash
# s33 run07 (one H200): the block-wise scale slots' layout written once (gm_slot_a / gm_slot_b, build slot) against
# main (m33 = e7fbc28): nvcc 13 ptxas of slot (spills, C75xx notes), its GEMM GPU tests, gemm_fp8.py --scaling block
# slot m33 m33 slot slot m33.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/slot.cubin -x cu build/slot/gemm-slot.cu > $L/nvcc-slot.txt 2>&1
echo "slot nvcc rc=$? C75 $(grep -c C75 $L/nvcc-slot.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-slot.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
t0=$SECONDS; (cd gemm && timeout 150 ../build/slot/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/slot-gemm-gpu-tests.txt 2>&1); rc=$?
echo "slot gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/slot-gemm-gpu-tests.txt | head -8
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
i=0
for v in slot m33 m33 slot slot m33; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $v"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-50,180-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
