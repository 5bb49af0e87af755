#!/usr/bin/env bash
# The timing this branch waits for: bench-gemm with the paths interleaved call by call (this branch's build, iv,
# in build/iv) against main's in-turn timing (m, in build/m), issue 30's seven shapes, --gemm own, in the order
# iv m iv, on every GPU of the machine (2 and 4 GPUs); then the branch merges if the rounds agree and none reads
# below 1 (the twenty-first session measured its first form, cb53661, on 2 H200s: rounds within 1.6%).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in iv m iv; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 120 ] && { echo "skip $b-$i"; continue; }
	timeout 170 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$b-$i.txt | paste - - ; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
