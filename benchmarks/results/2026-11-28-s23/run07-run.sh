#!/usr/bin/env bash
# s23 run07 (one H200): fs (exp/fused-sum-2) checked on ranks sharing the GPU: bench-gemm --gemm own --mode overlap on 2 and 3 ranks, growing and replayable signals (NCCL refuses shared GPUs: the check is against fp64 samples).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run07.sh $L/run.sh
for x in "2 off" "2 on" "3 off"; do set -- $x; [ $(left) -lt 60 ] && { echo "skip $x"; continue; }; t0=$SECONDS
	timeout 100 build/fs/hiercoll bench-gemm --gpus $1 --graphs $2 --gemm own --mode overlap --reps 3 \
		--shapes 2048x2048x4096,1536x2056x4224,1024x4096x2048 > $L/shared-fs-g$1-graphs-$2.txt 2>&1
	echo "gpus $1 graphs $2 rc=$? $((SECONDS-t0))s"; grep -oE '^[0-9]+x[0-9]+x[0-9]+|(ok|FAIL)[^|]*|rror.*' $L/shared-fs-g$1-graphs-$2.txt | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
