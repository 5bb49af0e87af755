#!/usr/bin/env bash
# s39 run09 (one H200): the ping-pong loader made cheaper (exp/pp-d 3rd commit, build/pp39v: stage and phase counted,
# not divided by 6; pp and ppl load the half's B in one 128-row box, 2 TMA loads a stage instead of 3). gemm_fp8.py
# row-wise, PP 1, 0, 1, 0 in turn, then per tensor PP 1, 0, one process each (as run08, the consumers count their stage and phase too: pp39v).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run09.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/pp39v/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp39v
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0; for v in 1 0 1 0; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/row-pp$v-$i.txt 2>&1
	echo "row pp$v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/row-pp$v-$i.txt | awk '{print $1, $2, $15}' | tr '\n' ' '; echo
	grep -m2 -iE "error|fail|exceed" $L/row-pp$v-$i.txt | cut -c1-200
done
for v in 1 0; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling tensor --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/tensor-pp$v-$i.txt 2>&1
	echo "tensor pp$v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/tensor-pp$v-$i.txt | awk '{print $1, $2, $15}' | tr '\n' ' '; echo
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
