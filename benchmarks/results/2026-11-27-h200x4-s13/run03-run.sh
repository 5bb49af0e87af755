#!/usr/bin/env bash
# s13 run03 (4 GPUs): 2ea2da9 — the Python tests on one rank (whole suite) and test_torch_graphs on 4; verify at misaligned inputs per engine: at 2 bytes (bf16, fp16 summed; fp32, int32
# refused), at 4 bytes (fp32, int32 summed), at 8 bytes under auto; registered, under a bound, 2 GPUs, 2x2.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13b
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
s() { local name=$1 t=$2; shift 2; local t0=$SECONDS; timeout $t "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-160)"; }
s py-1 200 python3 -m pytest -q -rs python/tests
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 80 $B/hiercoll verify --repeat 5 --calls 1 "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-200)"; }
for e in auto pull sm copy ring; do
	v verify-off2-$e X=0 --engine $e --input-offset 2
	v verify-off4-$e X=0 --engine $e --input-offset 4 --dtypes fp32,int32
done
v verify-off2-pull-reg X=0 --engine pull --register --input-offset 2
v verify-off4-pull-reg X=0 --engine pull --register --input-offset 4 --dtypes fp32,int32
v verify-off2-max64 X=0 --max-symm 64M --input-offset 2
v verify-off4-max64 X=0 --max-symm 64M --input-offset 4 --dtypes fp32,int32
v verify-off8-auto X=0 --input-offset 8 --dtypes fp32,int32
v verify-off4-g2 CUDA_VISIBLE_DEVICES=0,1 --input-offset 4
v verify-off4-2x2 X=0 --nodes 2 --input-offset 4
s graphs-4 90 torchrun --nproc-per-node 4 python/tests/test_torch_graphs.py -v
cd $OUT && tar czf logs.tgz logs && rm -rf logs
