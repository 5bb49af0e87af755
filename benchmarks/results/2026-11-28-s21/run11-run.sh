#!/usr/bin/env bash
# s21 run11 (2 GPUs): build ca (branch exp/chunk-arrive) on 2 H200s: bench-gemm --gemm own at 8192x8192x8192 and
# 4096x8192x8192 with --chunks 1 (main's path), 2 and 4, and main (m), in turn ca1 ca2 ca4 m: the chunks' cost
# where the peer's block lands before the GEMM ends, and their check over NVLink (with the SMs' push).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((200 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x8192,4096x8192x8192
i=0
for x in "ca 1" "ca 2" "ca 4" "m 0"; do set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 35 ] && { echo "skip $x"; continue; }
	timeout 60 build/$1/hiercoll bench-gemm --gemm own --shapes $S --chunks $2 > $L/gemm-$1-c$2-$i.txt 2>&1
	echo "$1 chunks $2 rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/gemm-$1-c$2-$i.txt | cut -c1-20,88-200; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
