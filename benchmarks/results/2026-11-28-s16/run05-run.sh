#!/usr/bin/env bash
# s16 run05: overlapped against sequential (and GEMM then NCCL) at small products, where Auto (ModeFor) picks
# sequential below 1e11 FLOP per rank; main at d22b071 (s16n), bench-gemm --gemm own, all paths in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 300 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-200; }
S=256x8192x8192,512x8192x8192,512x4096x4096,1024x4096x4096,2048x4096x4096,1024x8192x2048,4096x8192x2048,2048x8192x4096,256x4096x1024,1024x1024x1024
g small s16n --shapes $S --reps 5
cd $OUT && tar czf logs.tgz logs && rm -rf logs
