#!/usr/bin/env bash
# s36 run03 (one H200): the fp8 GEMM at whole waves beside its neighbours: main (m36) per tensor and row-wise at
# 4096x8192x2048 (1024 tiles of 128x256: 7.76 waves of 132 CTAs, the last 0.76 by stream-K) beside 4224x8192x2048
# (1056 tiles: 8 whole waves), 16384x4096x3584 (15.52 waves) beside 16896x4096x3584 (16), 8192x8192x7168 (15.52)
# beside 8448x8192x7168 (16); three processes per scaling, in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((400 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,73-99,181-200
}
W=4096x8192x2048,4224x8192x2048,16384x4096x3584,16896x4096x3584,8192x8192x7168,8448x8192x7168
i=0
for r in 1 2 3; do for sc in tensor row; do i=$((i+1)); one $sc m36 $W $i; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
