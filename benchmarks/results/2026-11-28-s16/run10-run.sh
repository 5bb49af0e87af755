#!/usr/bin/env bash
# s16 run10: the own node's sum after the event that ends the GEMM (s16g: f996770 + the change) against f996770
# (s16b), bench-gemm --gemm own, in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 300 build/$b/hiercoll bench-gemm --gemm own --mode overlap "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-150; grep traced $L/$name.txt | sed 's/.*ends/ends/' | cut -c1-120; }
S=1024x8192x28672,2048x8192x28672,8192x8192x8192,4096x8192x8192
g new-1 s16g --shapes $S
g old-1 s16b --shapes $S
g old-2 s16b --shapes $S
g new-2 s16g --shapes $S
cd $OUT && tar czf logs.tgz logs && rm -rf logs
