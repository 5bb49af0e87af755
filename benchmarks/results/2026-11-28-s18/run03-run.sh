#!/usr/bin/env bash
# s18 run03 (4 GPUs): the ring's channels several to a thread block (build rg, not committed): the ring kernel's
# GPU test, verify with the pull engine's ring from small blocks at 2 and 4 channels per block (both protocols),
# then bench zero copy at 32M..2G: the default (128 channels on 128 SMs) beside 32 SMs holding 32 / 64 / 128 /
# 256 channels and 16 SMs holding 64, in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/rg
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
T0=$SECONDS
left() { [ $((SECONDS-T0)) -lt $1 ]; }
t0=$SECONDS; (cd intranode/ring && timeout 60 ../../$B/ring.test -test.run GPU -test.v > $L/ring-gpu-test.txt 2>&1); echo "ring.test rc=$? $((SECONDS-t0))s"; grep -iE "regist|spill|local|PASS|FAIL|ok" $L/ring-gpu-test.txt | head -8
v() { local name=$1; shift; local t0=$SECONDS
	timeout 90 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -2 $L/$name.txt; return $rc; }
ok=0
v verify-pb4 --ring-from 64K --ring-channels 8 --ring-per-block 4 --calls 1 --repeat 100 || ok=1
v verify-pb2-graphs --ring-from 64K --ring-channels 6 --ring-per-block 2 --graphs on --calls 1 --repeat 100 || ok=1
v verify-ring-pb8 --engine ring --ring-channels 16 --ring-per-block 8 --max-symm 64M --calls 1 --repeat 20 || ok=1
[ $ok = 0 ] || { echo "verify failed: no timing"; cd $OUT && tar czf logs.tgz logs && rm -rf logs; exit 1; }
b() { local name=$1; shift; local t0=$SECONDS; left 540 || { echo "$name skipped"; return; }
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E 'symmetric memory' $L/$name.txt | cut -c1-200; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
Z=32M,128M,512M,1G,2G
b def-1 --sizes $Z
b c128p4-1 --sizes $Z --ring-channels 128 --ring-per-block 4
b c64p2-1 --sizes $Z --ring-channels 64 --ring-per-block 2
b c32p1-1 --sizes $Z --ring-channels 32 --ring-per-block 1
b c256p8-1 --sizes $Z --ring-channels 256 --ring-per-block 8
b c64p4-1 --sizes $Z --ring-channels 64 --ring-per-block 4
b c128p4-2 --sizes $Z --ring-channels 128 --ring-per-block 4
b def-2 --sizes $Z
b c256p8-2 --sizes $Z --ring-channels 256 --ring-per-block 8
echo "total $((SECONDS-T0))s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
