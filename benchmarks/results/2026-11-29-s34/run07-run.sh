#!/usr/bin/env bash
# s34 run07 (one H200): exp/block-s34's E (the next k tile's block scales read during this k tile's last quarter when
# mbarrier.test_wait finds its stage landed) against main's device code (bb5ee2b), in turn: gemm_fp8.py block at 5
# shapes; then the GEMM GPU tests under E (its check of spills and serialised wgmmas under CUDA 13).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((500 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bb/libhiercoll.so
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
i=0
for v in main E E main main E; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $v"; continue; }
	vv=$v; [ $v = main ] && vv=
	HIERCOLL_GEMM_VARIANT=$vv HIERCOLL_CACHE_DIR=/tmp/c-$v timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 --check-rows 16 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-45,180-245; done
t0=$SECONDS; (cd gemm && HIERCOLL_GEMM_VARIANT=E HIERCOLL_CACHE_DIR=/tmp/c-E timeout 150 ../build/bb/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/E-gemm-gpu-tests.txt 2>&1); rc=$?
echo "E gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error|C75" $L/E-gemm-gpu-tests.txt | head -8
cd $OUT && tar czf logs.tgz logs && rm -rf logs
