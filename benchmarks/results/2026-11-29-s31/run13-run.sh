#!/usr/bin/env bash
# s31 run13 (one H200): u (main a70e8ce with the consumers' warpgroup and stage index read as warp-uniform and each
# stage's descriptors built once per k tile, so that the wgmma descriptors live in uniform registers: no R2UR before
# each wgmma) against main m1: nvcc 13's ptxas -v, u's GEMM GPU tests, gemm_fp8.py block u m1 m1 u, tensor u m1,
# row m1 u.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((430 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/u.cubin -x cu build/u/gemm-u.cu > $L/nvcc-u.txt 2>&1
echo "u nvcc: C75 $(grep -c C75 $L/nvcc-u.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-u.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
for k in hc_gemm_e4m3_bf16_nk_block hc_gemm_e4m3_bf16_nk hc_gemm_bf16_nk; do echo "$k: R2UR $(cuobjdump -sass -fun $k /tmp/u.cubin | grep -c R2UR), QGMMA/HGMMA $(cuobjdump -sass -fun $k /tmp/u.cubin | grep -cE 'QGMMA|HGMMA')"; done | tee $L/sass-u-counts.txt
t0=$SECONDS; (cd gemm && timeout 200 ../build/u/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/u-gemm-gpu-tests.txt 2>&1); rc=$?
echo "u gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/u-gemm-gpu-tests.txt | head -8
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in u:block m1:block m1:block u:block u:tensor m1:tensor m1:row u:row; do i=$((i+1)); t0=$SECONDS; v=${b%%:*}; sc=${b##*:}
	[ $(left) -lt 30 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 50 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$sc-$v-$i.txt 2>&1
	echo "$sc $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-$v-$i.txt | cut -c1-50,180-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
