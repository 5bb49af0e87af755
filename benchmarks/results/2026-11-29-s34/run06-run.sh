#!/usr/bin/env bash
# s34 run06 (one H200): exp/block-s34 (main bb5ee2b + the variant hook): S1 (the block scales read after the first
# quarter's wgmmas), D1 / D2 (the second consumer 300 / 600 clocks late at its first tile, out of phase with the first)
# against main's device code, in turn: gemm_fp8.py block at 5 shapes and at the one-tile shape.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bb/libhiercoll.so
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168,16896x256x65536
i=0
for v in main S1 D1 D2 D2 D1 S1 main main S1 D1 D2; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $v"; continue; }
	vv=$v; [ $v = main ] && vv=
	HIERCOLL_GEMM_VARIANT=$vv HIERCOLL_CACHE_DIR=/tmp/c-$v timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 --check-rows 16 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-45,180-245; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
