#!/usr/bin/env bash
# s38 run07 (one H200): the ping-pong kernel ported onto main (branch exp/pp-u: the twenty-ninth session's pp and
# its clustered form ppc, with the stage index and wgmma descriptors warp-uniform as in main's mainloop, the first
# wgmma at scale-d 0, the row-wise column scales in gm_col_slot's order), from the branch's library (build/pp),
# chosen by HIERCOLL_GEMM_PP (0: main's kernels in the same library, 1: pp, 2: ppc). gemm_fp8.py row-wise then per
# tensor, the three in turn, one process each (every output checked against fp64 by the script); then the branch's
# TestGemmScalingsOnGPU under PP=1 and PP=2 (every tail, stream-K, odd grids).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run07.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
for sc in row tensor; do for v in 0 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_PP=$v HIERCOLL_LIB=$PWD/build/pp/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp timeout 60 python3 benchmarks/torch/gemm_fp8.py \
		--scaling $sc --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/$sc-pp$v.txt 2>&1
	echo "$sc pp$v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-pp$v.txt | awk '{print $1, $2, $3}' | tr '\n' ' '; echo
	grep -m2 -iE "error|fail|exceed" $L/$sc-pp$v.txt | cut -c1-200
done; done
cd gemm
for v in 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_PP=$v HIERCOLL_CACHE_DIR=/tmp/c-pp timeout 75 ../build/pp/gemm.test -test.run 'TestGemmScalingsOnGPU' -test.v > $L/pp$v-gemm-gpu-tests.txt 2>&1
	echo "pp$v tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- FAIL|--- PASS: TestGemm|ok|FAIL|PASS)" $L/pp$v-gemm-gpu-tests.txt | head -4
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
