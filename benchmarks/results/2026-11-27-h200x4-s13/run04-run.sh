#!/usr/bin/env bash
# s13 run04 (4 GPUs): 2ea2da9 — 2 GPUs: the copy engine's pull chunk at 1 and 2 GiB (zero copy), 64M / 128M (the
# default's cap) / 256M, reps 5, in both orders; 4 GPUs: the standing zero-copy and copied-in rows at this commit.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13b
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 150 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
b g2-cechunk-1 CUDA_VISIBLE_DEVICES=0,1 --engine pull --sizes 1G,2G --reps 5 --ce-chunk 64M,128M,256M
b g2-cechunk-2 CUDA_VISIBLE_DEVICES=0,1 --engine pull --sizes 1G,2G --reps 5 --ce-chunk 256M,128M,64M
b g4-zc X=0 --engine pull
b g4-copyin X=0 --engine pull --copy-in --sizes 32M,128M,512M,1G,2G
cd $OUT && tar czf logs.tgz logs && rm -rf logs
