#!/usr/bin/env bash
# s36 run01 (one H200): where the row-wise fp8 kernel's extra time goes at short K. Builds in turn, one process
# per build and shape, three rounds: m36 per tensor, m36 row-wise, rw (row-wise: the consumers wait for the
# scales and free them but do not multiply), rn (row-wise: no scale loader, no wait, no multiply). rw and rn
# store wrong products (their check fails by design: timing only). Then main's GEMM GPU tests.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
one() {  # one SCALING BUILD SHAPE TAG
	local t0=$SECONDS
	[ $(left) -lt 30 ] && { echo "skip $1 $2 $3 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$3-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s $(grep -E '^ +[0-9]+x' $L/$1-$2-$3-$4.txt | cut -c1-45,127-153,181-200)"
}
i=0
for r in 1 2 3; do
	for s in 4096x8192x2048 16384x4096x3584; do
		for b in "tensor m36" "row m36" "row rw" "row rn"; do i=$((i+1)); one $b $s $i; done
	done
done
t0=$SECONDS; [ $(left) -gt 90 ] && (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-t timeout 100 ../build/m36/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/m36-gemm-gpu-tests.txt 2>&1; echo "gemm GPU tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)" $L/m36-gemm-gpu-tests.txt | head)
cd $OUT && tar czf logs.tgz logs && rm -rf logs
