#!/usr/bin/env bash
# s14 run04 (2 GPUs): the ring's combine with RG_UNROLL vectors in flight per thread (hiercoll: 4, hiercoll8: 8)
# beside main's (hiercoll-old, one vector), at the default shape and wider ones; the pull engine (Auto's) beside;
# the ring's GPU test and verify.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14c
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1 bin=$2; shift 2; local t0=$SECONDS
	timeout 100 $B/$bin bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
t0=$SECONDS; timeout 120 $B/ring.test -test.run GPU -test.v > $L/ring-gpu-test.txt 2>&1; echo "ring.test rc=$? $((SECONDS-t0))s"; tail -3 $L/ring-gpu-test.txt
for bin in hiercoll hiercoll8; do
  t0=$SECONDS; timeout 150 $B/$bin verify --engine ring > $L/verify-ring-$bin.txt 2>&1; echo "verify $bin rc=$? $((SECONDS-t0))s"; tail -2 $L/verify-ring-$bin.txt
done
t0=$SECONDS; timeout 150 $B/hiercoll verify --engine ring --ring-channels 32 --ring-chunk 512K --graphs on > $L/verify-ring-c32-graphs.txt 2>&1; echo "verify c32 graphs rc=$? $((SECONDS-t0))s"; tail -2 $L/verify-ring-c32-graphs.txt
S=32M,128M,512M,2G
b pull hiercoll --engine auto --sizes $S
b ring-old hiercoll-old --engine ring --sizes $S
b ring-u4 hiercoll --engine ring --sizes $S
b ring-u8 hiercoll8 --engine ring --sizes $S
b ring-u4-c32 hiercoll --engine ring --sizes $S --ring-channels 32 --ring-chunk 512K
b ring-u8-c32 hiercoll8 --engine ring --sizes $S --ring-channels 32 --ring-chunk 512K
b ring-u4-c64 hiercoll --engine ring --sizes $S --ring-channels 64 --ring-chunk 512K
b ring-old-2 hiercoll-old --engine ring --sizes $S
b ring-u4-2 hiercoll --engine ring --sizes $S
cd $OUT && tar czf logs.tgz logs && rm -rf logs
