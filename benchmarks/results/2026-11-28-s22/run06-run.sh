#!/usr/bin/env bash
# s22 run06 (2 H200s): bench-gemm de m2 de m2 de at issue 30's seven shapes (de: the own step waits for the producer's done event).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((575 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run06.sh $L/run.sh
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in de m2 de m2 de; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 150 ] && { echo "skip $b-$i"; continue; }
	timeout 170 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$b-$i.txt | paste - - ; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
