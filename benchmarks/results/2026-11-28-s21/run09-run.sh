#!/usr/bin/env bash
# s21 run09 (one H200): build ca (branch exp/chunk-arrive: a chunk's arrival once the segments that cover it are
# copied) checked on ranks sharing the GPU: bench-gemm --gemm own with chunks beside signal segments on 2 and 3
# ranks (NCCL refuses shared GPUs: the check is against fp64 samples).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
for x in "2 2 4" "2 3 3" "3 2 4" "3 4 5"; do set -- $x; [ $(left) -lt 60 ] && { echo "skip $x"; continue; }; t0=$SECONDS
	timeout 100 build/ca/hiercoll bench-gemm --gpus $1 --chunks $2 --segments $3 --gemm own --mode overlap --reps 3 \
		--shapes 2048x2048x4096,1536x2056x4224 > $L/shared-g$1-c$2-s$3.txt 2>&1
	echo "gpus $1 chunks $2 segments $3 rc=$? $((SECONDS-t0))s"; grep -oE '^[0-9]+x[0-9]+x[0-9]+|(ok|FAIL)[^|]*of bound|rror.*' $L/shared-g$1-c$2-s$3.txt | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
