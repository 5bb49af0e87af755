#!/usr/bin/env bash
# s21 run05 (one H200): the bf16 own GEMM in clusters of two sharing B (c2) against main (m): bench-mm at three
# local shapes, both layouts of B, in the order c2 m m c2.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
i=0
for b in c2 m m c2; do i=$((i+1)); [ $(left) -lt 100 ] && { echo "skip $b-$i"; continue; }; t0=$SECONDS
	timeout 140 build/$b/hiercoll bench-mm --shapes 8192x8192x7168,4096x8192x2048,8192x8192x2048 > $L/mm-$b-$i.txt 2>&1
	echo "mm $b rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x' $L/mm-$b-$i.txt | cut -c1-60,150-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
