#!/usr/bin/env bash
# s13 run01 (4 GPUs): 2ead070 — verify --input-offset 2 per engine (auto, pull, sm, copy, ring; pull registered
# and under a bound; 2 GPUs), verify --input-offset 6 under auto.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 100 $B/hiercoll verify --repeat 10 --calls 2 "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-200)"; }
v verify-off2-auto X=0 --input-offset 2
v verify-off2-pull X=0 --engine pull --input-offset 2
v verify-off2-sm X=0 --engine sm --input-offset 2
v verify-off2-copy X=0 --engine copy --input-offset 2
v verify-off2-ring X=0 --engine ring --input-offset 2
v verify-off2-pull-reg X=0 --engine pull --register --input-offset 2
v verify-off2-max64 X=0 --max-symm 64M --input-offset 2
v verify-off6-auto X=0 --input-offset 6
v verify-off2-g2 CUDA_VISIBLE_DEVICES=0,1 --input-offset 2
v verify-off2-2x2 X=0 --nodes 2 --input-offset 2
cd $OUT && tar czf logs.tgz logs && rm -rf logs
