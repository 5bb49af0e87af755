#!/usr/bin/env bash
# s14 run06 (4 GPUs): the pull engine's ring for large calls — zero copy, off beside on at several shapes
# (RG_UNROLL 8), sizes 8M..2G; run07.sh has the copied-in path, verify and floors.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14d
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 110 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
S=8M,32M,128M,512M,1G,2G
b off-1 --engine pull --ring-from off --sizes $S
b on-default --engine pull --ring-from 1M --sizes $S
b on-c32 --engine pull --ring-from 1M --sizes $S --ring-channels 32
b on-c128 --engine pull --ring-from 1M --sizes $S --ring-channels 128
b on-c64-k256 --engine pull --ring-from 1M --sizes $S --ring-chunk 256K
b on-c64-s4-k256 --engine pull --ring-from 1M --sizes $S --ring-chunk 256K --ring-slots 4
b on-c128-k256 --engine pull --ring-from 1M --sizes $S --ring-channels 128 --ring-chunk 256K
b off-2 --engine pull --ring-from off --sizes $S
cd $OUT && tar czf logs.tgz logs && rm -rf logs
