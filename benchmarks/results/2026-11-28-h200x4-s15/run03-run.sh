#!/usr/bin/env bash
# s15 run03 (4 H200s): the ring's small calls on 64 channels of 128 KiB in the wide FIFOs (default) beside
# the wide shape asked (--ring-channels 128 --ring-chunk 256K: no narrowing), zero copy and copied in, in turn;
# 2 of the 4 GPUs: the copy engine's pulls (default) beside the SM pulls (--ce-pull off), and floors there;
# floors on 4 GPUs at 1 GiB.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15a
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
b() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
f() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 150 $B/hiercoll floors "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E "CE peer read|SM peer (write|read)" $L/$name.txt | cut -c1-110; }
S=16M,32M,48M,64M,2G
b small-1 --sizes $S
b wide-1 --sizes $S --ring-channels 128 --ring-chunk 256K
b wide-2 --sizes $S --ring-channels 128 --ring-chunk 256K
b small-2 --sizes $S
b ci-small --sizes $S --copy-in
b ci-wide --sizes $S --copy-in --ring-channels 128 --ring-chunk 256K
export CUDA_VISIBLE_DEVICES=0,1
b g2-ce-1 --sizes 32M,128M,512M,2G --register
b g2-sm-1 --sizes 32M,128M,512M,2G --register --ce-pull off
b g2-sm-2 --sizes 32M,128M,512M,2G --register --ce-pull off
b g2-ce-2 --sizes 32M,128M,512M,2G --register
f floors-g2 --bytes 1073741824
unset CUDA_VISIBLE_DEVICES
f floors-g4 --bytes 1073741824
cd $OUT && tar czf logs.tgz logs && rm -rf logs
