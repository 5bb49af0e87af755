#!/usr/bin/env bash
# s30 run11 (one H200): s10 (main e84be44 with the block-wise scales landing on a barrier per slot, not the stage's,
# and the next k tile's scales read while this one's last quarter runs) against f: nvcc 13's ptxas -v, then
# gemm_fp8.py --scaling block f s10 s10 f (its fp64 check; the GEMM GPU tests not run: device time).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((170 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
t0=$SECONDS
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/s10.cubin -x cu build/s10/gemm-q.cu > $L/nvcc-s10.txt 2>&1
echo "s10 nvcc $((SECONDS-t0))s: C75 $(grep -c C75 $L/nvcc-s10.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-s10.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in f s10 s10 f; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 25 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 40 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-260; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
