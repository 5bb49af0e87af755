#!/usr/bin/env bash
# s16 run07: the final library (s16f, 26e6f9a) against d22b071 (s16n) at small products, in turn, Auto's picks;
# the sequential and overlapped paths checked at the seven shapes (s16f) and with fp8 block scales.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 300 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-180; }
T=256x8192x8192,512x8192x8192,1024x8192x8192,512x4096x4096,1024x4096x4096,2048x4096x4096,2048x8192x4096,4096x8192x2048,2048x8192x8192,4096x8192x4096,1024x1024x1024
g small-new-1 s16f --shapes $T
g small-old-1 s16n --shapes $T
g small-old-2 s16n --shapes $T
g small-new-2 s16f --shapes $T
g seven s16f --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
g fp8-block s16f --input e4m3 --scaling block --shapes 1024x8192x8192,4096x8192x8192,2048x8192x28672 --reps 1
g fp8-row s16f --input e4m3 --scaling row --shapes 1024x8192x8192,4096x8192x8192 --reps 1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
