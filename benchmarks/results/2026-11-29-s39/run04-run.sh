#!/usr/bin/env bash
# s39 run04 (one H200): the own fp8 GEMM (main 6b84217, build/pp39t with HIERCOLL_GEMM_PP unset = main's kernels)
# and _scaled_mm fast, row-wise and per tensor, hot and with L2 flushed before each call (.s39-cold.py), twice.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run04.sh $L/run.sh; cp .s39-cold.py $L/cold.py
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/pp39t/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp39t
for i in 1 2; do t0=$SECONDS
	timeout 150 python3 .s39-cold.py > $L/cold-$i.txt 2>&1; echo "cold $i rc=$? $((SECONDS-t0))s"; grep -v -E "socket|^\[" $L/cold-$i.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
