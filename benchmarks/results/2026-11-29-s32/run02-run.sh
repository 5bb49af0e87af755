#!/usr/bin/env bash
# s32 run02 (one H200): r (exp/block-rot: a k tile's last quarter promoted once the next k tile's first quarter is issued) against main (0507c40):
# nvcc 13 ptxas of r, its GEMM GPU tests first, then gemm_fp8.py --scaling block r m m r r m r m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
for v in r; do
  nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/$v.cubin -x cu build/$v/gemm-$v.cu > $L/nvcc-$v.txt 2>&1
  echo "$v nvcc rc=$? C75 $(grep -c C75 $L/nvcc-$v.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-$v.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
  k=hc_gemm_e4m3_bf16_nk_block; echo "$v $k: R2UR $(cuobjdump -sass -fun $k /tmp/$v.cubin | grep -c R2UR), QGMMA $(cuobjdump -sass -fun $k /tmp/$v.cubin | grep -c QGMMA)" | tee -a $L/sass-counts.txt
done
t0=$SECONDS; (cd gemm && timeout 200 ../build/r/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/r-gemm-gpu-tests.txt 2>&1); rc=$?
echo "r gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/r-gemm-gpu-tests.txt | head -8
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
i=0
for v in r main main r r main r main; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $v"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-50,180-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
