#!/usr/bin/env bash
# s38 run08 (one H200, the last of the session's device time): ppc (the clustered ping-pong) again with fewer CTAs
# than SMs (HIERCOLL_GEMM_PP_GRID 128, 120, 112): whether run07's 2.2-2.4x was clusters left waiting for a GPC.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run08.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
for g in 128 120 112; do
	t0=$SECONDS
	HIERCOLL_GEMM_PP=2 HIERCOLL_GEMM_PP_GRID=$g HIERCOLL_LIB=$PWD/build/pp/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp timeout 45 python3 benchmarks/torch/gemm_fp8.py \
		--scaling row --shapes 8192x8192x7168,4096x8192x2048 --rounds 3 --iters 10 --check-rows 16 > $L/row-pp2-g$g.txt 2>&1
	echo "row pp2 grid $g rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/row-pp2-g$g.txt | awk '{print $1, $2, $3}' | tr '\n' ' '; echo
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
