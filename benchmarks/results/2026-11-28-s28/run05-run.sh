#!/usr/bin/env bash
# s28 run05 (nvidia-h200, one GPU): the own GEMM storing C straight from the consumers' registers instead of staging
# each half in shared memory for the storer's TMA store. Build d = exp/direct-store (main d522c95 + HIERCOLL_GEMM_DIRECT=1
# picks the kernels that store from registers where nothing is summed); d0 = unset (main's TMA store), d1 = set.
# gemm_fp8.py at issue 29's four shapes: row-wise d0 d1 d0 d1, per tensor d0 d1, block-wise d0 d1.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s28-run05.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 HIERCOLL_LIB=$PWD/build/d/libhiercoll.so
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for x in "row 0" "row 1" "row 0" "row 1" "tensor 0" "tensor 1" "block 0" "block 1"; do set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $x"; continue; }
	HIERCOLL_GEMM_DIRECT=$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-d$2-$i.txt 2>&1
	echo "$1 d$2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-d$2-$i.txt | cut -c1-24,180-232
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
