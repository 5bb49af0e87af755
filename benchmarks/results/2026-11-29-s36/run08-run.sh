#!/usr/bin/env bash
# s36 run08 (one H200): the standing one-GPU fp8 figures at 49f9f23 (each item's first wgmma at scale-d 0):
# gemm_fp8.py per tensor, row-wise, block-wise in turn, three processes each, issue 29's four shapes (block-wise
# also 8192x6144x7168).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((230 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
one() {  # one SCALING SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 15 ] && { echo "skip $1 $3"; return; }
	HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $2 --rounds 3 --iters 10 --check-rows 16 > $L/$1-h-$3.txt 2>&1
	echo "$1 $3 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-h-$3.txt | cut -c1-45,181-200
}
i=0
for r in 1 2 3; do
	i=$((i+1)); one tensor $S4 $i
	i=$((i+1)); one row $S4 $i
	i=$((i+1)); one block $S4,8192x6144x7168 $i
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
