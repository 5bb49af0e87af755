#!/usr/bin/env bash
# s14 run09 (4 GPUs): a50bb35 — where the ring should start: blocks of 4-32 MiB (16-128 MiB per rank) with the ring
# from 2 MiB blocks beside off, zero copy and copied in, in a context of blocks up to 32 MiB ("n": the narrow FIFOs)
# and in one of 2 GiB per rank ("w": the wide FIFOs).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14f
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
N=16M,32M,64M,128M
W=16M,32M,64M,2G
b zc-on-n1 --sizes $N --ring-from 2M
b zc-off-n1 --sizes $N --ring-from off
b ci-on-n1 --sizes $N --ring-from 2M --copy-in
b ci-off-n1 --sizes $N --ring-from off --copy-in
b zc-on-w --sizes $W --ring-from 2M
b ci-on-w --sizes $W --ring-from 2M --copy-in
b ci-off-w --sizes $W --ring-from off --copy-in
b ci-off-n2 --sizes $N --ring-from off --copy-in
b ci-on-n2 --sizes $N --ring-from 2M --copy-in
b zc-off-n2 --sizes $N --ring-from off
b zc-on-n2 --sizes $N --ring-from 2M
cd $OUT && tar czf logs.tgz logs && rm -rf logs
