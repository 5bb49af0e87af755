#!/usr/bin/env bash
# s16 run06 (4 GPUs): (a) main at d22b071 (s16n) against the same without the copy engine's pacing permits
# (s16q), bench-gemm --gemm own at issue 30's seven shapes, in turn; (b) small products: s16n against the
# sequential calls through a context of the default engine reading C in place (s16s), in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 300 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-180; }
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
g gemm-new-1 s16n --shapes $S
g gemm-nopace-1 s16q --shapes $S
g gemm-nopace-2 s16q --shapes $S
g gemm-new-2 s16n --shapes $S
T=256x8192x8192,512x8192x8192,1024x8192x8192,512x4096x4096,1024x4096x4096,2048x4096x4096,2048x8192x4096,4096x8192x2048,1024x1024x1024
g small-seq-1 s16s --shapes $T
g small-old-1 s16n --shapes $T
cd $OUT && tar czf logs.tgz logs && rm -rf logs
