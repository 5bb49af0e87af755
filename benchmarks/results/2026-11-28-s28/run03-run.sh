#!/usr/bin/env bash
# s28 run03 (nvidia-h200, one GPU): exp/peer-streams (build s: each node peer's copies of an overlapped step on a stream
# of their own) checked with 4 ranks sharing the GPU (--gpus 4), growing and replayable signals and captured:
# bench-gemm's checks against fp64 samples and NCCL at a reduce-pass shape, a summed shape and one with column tails.
# Timing is not the point (the ranks share one GPU).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s28-run03.sh $L/run.sh
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=2048x2048x4096,4096x2048x12288,1536x2056x4224
for x in "off" "on" "on --capture"; do [ $(left) -lt 100 ] && { echo "skip $x"; continue; }; t0=$SECONDS
	n=$(echo $x | tr -d ' -')
	timeout 150 build/s/hiercoll bench-gemm --gpus 4 --graphs $x --gemm own --mode overlap --reps 1 --iters 3 --shapes $S > $L/s-shared-g4-$n.txt 2>&1
	echo "graphs $x rc=$? $((SECONDS-t0))s"; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $L/s-shared-g4-$n.txt | cut -c1-30,150-; grep -i 'error\|fail' $L/s-shared-g4-$n.txt | head -3
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
