#!/usr/bin/env bash
# s14 run05 (2 GPUs, 4 and 3 ranks sharing them): the pull engine's ring for large calls (working tree after
# 88a6731: RG_UNROLL 8, pull/ring.go) — verify with the ring forced from small blocks, Auto's default, both
# protocols (graphs: the ring stays off), mixed sizes by the 100-call case.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14d
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1; shift; local t0=$SECONDS
	timeout 240 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -4 $L/$name.txt; }
v verify-g4-ring64k --gpus 4 --engine pull --ring-from 64K
v verify-g3-ring64k --gpus 3 --engine pull --ring-from 64K --dtypes bf16,int32
v verify-g4-ring64k-chunk --gpus 4 --engine pull --ring-from 64K --ring-channels 5 --ring-chunk 4K --ring-slots 3 --dtypes fp16,fp32
v verify-g4-ring-reg --gpus 4 --engine pull --ring-from 64K --register --dtypes bf16,int32
v verify-g4-auto --gpus 4
v verify-g4-graphs --gpus 4 --engine pull --ring-from 64K --graphs on --dtypes bf16
cd $OUT && tar czf logs.tgz logs && rm -rf logs
