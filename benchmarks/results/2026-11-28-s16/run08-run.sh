#!/usr/bin/env bash
# s16 run08 (4 GPUs): the final library (s16f, e100607): the push share after the GEMM at the copy-paced shapes
# (the estimate, 75%, 100%, none), in turn; small products with Auto's picks; the seven shapes, both paths checked.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1; shift; local t0=$SECONDS
	timeout 300 build/s16f/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-150; }
P=8192x8192x8192,4096x8192x8192,8192x5120x13824
g push-est-1 --shapes $P
g push-75-1 --shapes $P --push-share 75
g push-100-1 --shapes $P --push-share 100
g push-none-1 --shapes $P --push-share -1
g push-est-2 --shapes $P
g push-none-2 --shapes $P --push-share -1
g push-100-2 --shapes $P --push-share 100
g push-75-2 --shapes $P --push-share 75
g small --shapes 256x8192x8192,1024x8192x8192,2048x4096x4096,2048x8192x4096,4096x8192x2048,2048x8192x8192,4096x8192x4096,8192x8192x4096,1024x1024x1024
g seven --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
t0=$SECONDS; PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/s16f/libhiercoll.so timeout 200 torchrun --nproc-per-node 4 \
	-m pytest -q python/tests/test_hiercoll.py > $L/py-4.txt 2>&1; echo "py-4 rc=$? $((SECONDS-t0))s"; tail -2 $L/py-4.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
