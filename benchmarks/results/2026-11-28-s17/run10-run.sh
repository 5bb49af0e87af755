#!/usr/bin/env bash
# s17 run10 (4 GPUs, the session's last device minutes): issue 30's seven shapes, bench-gemm --gemm own at 77f8f7f
# (s17f) with ovl/bound by round; gemm_fp8.py --scaling row on 4 ranks, 3c56e26's library (s17f) then main's (s17m).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
t0=$SECONDS
timeout 110 build/s17f/hiercoll bench-gemm --gemm own --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 > $L/seven.txt 2>&1
echo "seven rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/seven.txt | cut -c1-220
p() { local name=$1 b=$2; local t0=$SECONDS
	PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 50 torchrun --nproc-per-node 4 \
		benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --iters 10 > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/$name.txt | cut -c1-250; }
p rs4-row-f s17f
p rs4-row-m s17m
cd $OUT && tar czf logs.tgz logs && rm -rf logs
