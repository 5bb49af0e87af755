#!/usr/bin/env bash
# s15 run01: the final ring kernel (4 vectors, counts on the device) on a GPU for the first time; the new
# default (the ring from blocks of 8 MiB, calls of blocks below 16 MiB on 64 channels of 128 KiB in wider
# FIFOs) beside the old threshold (--ring-from 16M: the same code as 13987b4 for every size) and the pull
# (--ring-from off), zero copy, in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15a
ngpu=$(nvidia-smi -L | wc -l)
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
v() { local name=$1; shift; local t0=$SECONDS
	timeout 120 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -2 $L/$name.txt; }
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
t0=$SECONDS; timeout 60 $B/ring.test -test.run GPU -test.v > $L/ring-gpu-test.txt 2>&1; echo "ring.test rc=$? $((SECONDS-t0))s"; grep -iE "regist|spill|local|PASS|FAIL|ok" $L/ring-gpu-test.txt | head -12
t0=$SECONDS; timeout 150 $B/rs2d.test -test.run 'TestGPUGraphReplays/3ranks' -test.v > $L/rs2d-graphs.txt 2>&1; echo "graphs rc=$? $((SECONDS-t0))s"; grep -E "^(---|    ---|ok|PASS|FAIL)" $L/rs2d-graphs.txt
v verify-pullring --ring-from 64K --calls 1 --repeat 100
v verify-pullring-graphs --ring-from 64K --graphs on --calls 1 --repeat 100
v verify-pullring-reg --ring-from 64K --register --calls 1 --repeat 100
v verify-auto --calls 1 --repeat 100
S=1M,4M,8M,16M,32M,64M,128M,512M,2G
b zc-new-1 --sizes $S
b zc-old-1 --sizes $S --ring-from 16M
b zc-off-1 --sizes $S --ring-from off
b zc-old-2 --sizes $S --ring-from 16M
b zc-new-2 --sizes $S
cd $OUT && tar czf logs.tgz logs && rm -rf logs
