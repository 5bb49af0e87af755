#!/usr/bin/env bash
# s21 run12 (2 GPUs): bench-gemm with the paths interleaved call by call (build iv, branch exp/interleave) against
# main's in-turn timing (m), issue 30's seven shapes, --gemm own, in the order iv m iv: whether the rounds'
# ovl/bound stops reading below 1 and where the seven shapes stand against the 1.10x bound.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((280 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in iv m iv; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 80 ] && { echo "skip $b-$i"; continue; }
	timeout 120 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$b-$i.txt | awk '{print $1, "ovl", $9, "ovl/bound", $12}'
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$b-$i.txt | paste - - | head -8; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
