#!/usr/bin/env bash
# s23 run02 (one H200): gemm_fp8.py per tensor and row-wise at 4096x8192xK, K 128..4096 (main's library): the per-tile cost (intercept) against cuBLAS's.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run02.sh $L/run.sh
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=4096x8192x128,4096x8192x256,4096x8192x512,4096x8192x1024,4096x8192x2048,4096x8192x4096,8192x8192x2048
i=0
for x in tensor row tensor row; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
	HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 120 python3 benchmarks/torch/gemm_fp8.py --scaling $x --shapes $S --rounds 3 --iters 20 > $L/ksweep-$x-$i.txt 2>&1
	echo "$x rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/ksweep-$x-$i.txt | cut -c1-250; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
