#!/usr/bin/env bash
# s34 run03 (one H200): exp/block-p2 (main at 75c94cc, E5 landed, + the variant hook): P2 (the promotion's FFMAs grouped
# by scale, so that NVRTC 12.4 reuses the scale's register in 120 of 128) against main's device code, in turn:
# gemm_fp8.py block (5 shapes, 4 processes each), the one-tile shape.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bb/libhiercoll.so
S5=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
one() {  # one SCALING VARIANT SHAPES TAG
	local t0=$SECONDS vv=$2; [ $2 = main ] && vv=
	[ $(left) -lt 60 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_GEMM_VARIANT=$vv HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0; for v in main P2 P2 main main P2 P2 main; do i=$((i+1)); one block $v $S5 $i; done
for v in main P2 P2 main; do i=$((i+1)); one block $v 16896x256x65536 $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
