#!/usr/bin/env bash
# s14 run01 (4 GPUs): the ring engine's shape (channels, slots, chunk) at 512 MiB and 2 GiB, beside the pull engine.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14a
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
b pull --engine pull --sizes 512M,2G
for s in "16 2 128K" "64 2 128K" "32 4 512K" "64 4 512K" "64 2 1M" "128 2 512K" "32 8 256K"; do
  set -- $s
  b ring-c$1-s$2-k$3 --engine ring --sizes 512M,2G --ring-channels $1 --ring-slots $2 --ring-chunk $3
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
