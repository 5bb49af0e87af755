#!/usr/bin/env bash
# s12 run06 (4x H200): the session's final build (h = 0722d8c) on GPUs: verify --engine pull
# (4 GPUs, under --max-symm 64M, 2 GPUs); bench --engine pull --copy-in beside main f9bf538
# (m) at 128 MiB / 512 MiB / 2 GiB, h m m h; the rounds under --max-symm 64M (h).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 120 build/r6/hiercoll verify --engine pull --repeat 30 "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt)"; }
b() { local name=$1 bin=$2; shift 2; local t0=$SECONDS
	timeout 150 $bin bench --engine pull "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(grep -E '^ +[0-9]{5,}' $L/$name.txt | awk '{printf "%s/%s ", $4, $7}')"; }
v verify-g4 X=0
v verify-g4-max64 X=0 --max-symm 64M
v verify-g2 CUDA_VISIBLE_DEVICES=0,1
S="--copy-in --sizes 128M,512M,2G"
b g4-h-1 build/r6/hiercoll $S; b g4-m-1 build/r6/hiercoll-main $S; b g4-m-2 build/r6/hiercoll-main $S; b g4-h-2 build/r6/hiercoll $S
b g4-h-r64 build/r6/hiercoll --copy-in --max-symm 64M --sizes 128M,2G
cd $OUT && tar czf logs.tgz logs && rm -rf logs
