#!/usr/bin/env bash
# s14 run07 (4 GPUs): the pull engine's ring for large calls — copied in (plain buffer) off beside on; verify on
# 4 GPUs with the ring from small blocks and registered; floors at 1 GiB (the all-peer SM rows).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14d
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
b() { local name=$1; shift; local t0=$SECONDS
	timeout 110 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
v() { local name=$1; shift; local t0=$SECONDS
	timeout 150 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -3 $L/$name.txt; }
S=8M,32M,128M,512M,1G,2G
b copyin-off --engine pull --ring-from off --copy-in --sizes $S
b copyin-on --engine pull --ring-from 1M --copy-in --sizes $S
b ring64m-default --engine ring --max-symm 64M --sizes 128M,512M,2G
b ring64m-c64 --engine ring --max-symm 64M --ring-channels 64 --sizes 128M,512M,2G
b ring64m-c64-s4 --engine ring --max-symm 64M --ring-channels 64 --ring-slots 4 --sizes 128M,512M,2G
v verify-ring64k --engine pull --ring-from 64K
v verify-ring64k-reg --engine pull --ring-from 64K --register --dtypes bf16,int32
t0=$SECONDS; timeout 200 $B/hiercoll floors --bytes 1073741824 > $L/floors-1g.txt 2>&1; echo "floors rc=$? $((SECONDS-t0))s"; grep -E "all 3|ring" $L/floors-1g.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
