#!/usr/bin/env bash
# s15 run05 (2 GPUs): registered inputs pulled by the copy engine, the bench's input allocation 16 bytes past
# the input (s15a, as since ca0c7a7), rounded up to whole 2 MiB (s15b) and exact (s15c), in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name --format=csv >> $L/when.txt 2>&1
b() { local name=$1 B=$2; shift 2; local t0=$SECONDS
	timeout 100 build/s15r/hiercoll-$B bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
S=512M,1G,2G
b plus16-1 a --sizes $S --register
b round-1 b --sizes $S --register
b exact-1 c --sizes $S --register
b exact-2 c --sizes $S --register
b round-2 b --sizes $S --register
b plus16-2 a --sizes $S --register
b round-copyin b --sizes $S --copy-in
cd $OUT && tar czf logs.tgz logs && rm -rf logs
