#!/usr/bin/env bash
# s34 run02 (one H200): exp/block-bisect's E5 (the stream-K gather's wait by a warp whose control flow is warp-uniform:
# NVRTC 12.4 then keeps every mainloop's stage index in uniform registers, as the no-epilogue build NOEPI did, 7% faster
# at the one-tile shape in run01) against main's device code, in turn: gemm_fp8.py block (5 shapes), row and tensor
# (4 shapes), the one-tile shape with NOEPI beside; then the GEMM GPU tests under E5 (stream-K gather checked).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bb/libhiercoll.so
S5=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
one() {  # one SCALING VARIANT SHAPES TAG
	local t0=$SECONDS vv=$2; [ $2 = main ] && vv=
	[ $(left) -lt 140 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_GEMM_VARIANT=$vv HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0; for v in main E5 E5 main main E5; do i=$((i+1)); one block $v $S5 $i; done
for v in main E5 E5 main main E5; do i=$((i+1)); one row $v $S4 $i; done
for v in E5 main main E5; do i=$((i+1)); one tensor $v $S4 $i; done
for v in main E5 NOEPI NOEPI E5 main; do i=$((i+1)); one block $v 16896x256x65536 $i; done
t0=$SECONDS; (cd gemm && HIERCOLL_GEMM_VARIANT=E5 HIERCOLL_CACHE_DIR=/tmp/c-E5 timeout 170 ../build/bb/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/E5-gemm-gpu-tests.txt 2>&1); rc=$?
echo "E5 gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/E5-gemm-gpu-tests.txt | head -8
cd $OUT && tar czf logs.tgz logs && rm -rf logs
