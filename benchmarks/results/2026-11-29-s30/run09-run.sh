#!/usr/bin/env bash
# s30 run09 (one H200): s9 (main e84be44 with the block-wise scales read by ld.shared from a 32-bit shared address
# instead of a generic pointer: NVRTC 12.4 then spills nothing) against f (e84be44): nvcc 13's ptxas -v, s9's GEMM
# GPU tests, gemm_fp8.py --scaling block f s9 s9 f.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/s9.cubin -x cu build/s9/gemm-q.cu > $L/nvcc-s9.txt 2>&1
echo "s9 nvcc $((SECONDS-t0))s: C75 $(grep -c C75 $L/nvcc-s9.txt); kernels spilling $(grep -cE '[1-9][0-9]* bytes spill stores' $L/nvcc-s9.txt)"
t0=$SECONDS; (cd gemm && timeout 150 ../build/s9/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/s9-gemm-gpu-tests.txt 2>&1); rc=$?
echo "s9 gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic" $L/s9-gemm-gpu-tests.txt | head -4
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in f s9 s9 f; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
