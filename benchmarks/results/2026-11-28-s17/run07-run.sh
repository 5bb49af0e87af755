#!/usr/bin/env bash
# s17 run06 (2 GPUs): the row-wise scales in shared memory (3c56e26, s17f) in the fused GEMM + RS: bench-gemm's
# check of both paths with fp8 row-wise and per-tensor scales; gemm_fp8.py --scaling row on 2 ranks, s17f and
# main (s17m) in turn, f, m, m, f; the Python tests on 1 rank.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1; shift; local t0=$SECONDS
	timeout 200 build/s17f/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-200; }
g fp8-row --input e4m3 --scaling row --shapes 1024x8192x8192,4096x8192x8192,2048x8192x28672 --reps 1
g fp8-tensor --input e4m3 --shapes 1024x8192x8192,4096x8192x8192 --reps 1
p() { local name=$1 b=$2; local t0=$SECONDS
	PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 200 torchrun --nproc-per-node 2 \
		benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --iters 10 > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/$name.txt | cut -c1-250; }
p rs2-row-f-1 s17f
p rs2-row-m-1 s17m
p rs2-row-m-2 s17m
p rs2-row-f-2 s17f
t0=$SECONDS; PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/s17f/libhiercoll.so timeout 240 python3 -m pytest -q python/tests > $L/py-1.txt 2>&1; echo "py-1 rc=$? $((SECONDS-t0))s"; tail -3 $L/py-1.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
