#!/usr/bin/env bash
# s16 run01 (4 GPUs): walk groups that keep segments apart (s16n) against main (s16o), bench-gemm --gemm own
# in turn; the own rows of a copied-in call in place from 4 MiB blocks (s16p) against main at 8-32 MiB.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 240 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-200; grep -E 'traced' $L/$name.txt | cut -c1-200; }
b() { local name=$1 bin=$2; shift 2; local t0=$SECONDS
	timeout 90 build/$bin/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
S=2048x8192x28672,2048x8192x8192,8192x5120x13824
g gemm-new-1 s16n --shapes $S
g gemm-old-1 s16o --shapes $S
g gemm-old-2 s16o --shapes $S
g gemm-new-2 s16n --shapes $S
b ci-p-1 s16p --sizes 8M,16M,32M --copy-in
b ci-o-1 s16o --sizes 8M,16M,32M --copy-in
b ci-o-2 s16o --sizes 8M,16M,32M --copy-in
b ci-p-2 s16p --sizes 8M,16M,32M --copy-in
cd $OUT && tar czf logs.tgz logs && rm -rf logs
