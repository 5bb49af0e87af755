#!/usr/bin/env bash
# s15 run04 (a machine of 2 GPUs): the copy engine's pulls (the 2-GPU default from blocks of 256 MiB) beside the
# SM pulls (--ce-pull off) in turn, registered and zero copy; floors at 1 GiB.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15a
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
S=1M,8M,32M,128M,512M,1G,2G
b ce-1 --sizes $S --register
b sm-1 --sizes $S --register --ce-pull off
b sm-2 --sizes $S --register --ce-pull off
b ce-2 --sizes $S --register
b zc-ce --sizes 512M,2G
b zc-sm --sizes 512M,2G --ce-pull off
timeout 150 $B/hiercoll floors --bytes 1073741824 > $L/floors.txt 2>&1; echo "floors rc=$?"
grep -E "CE peer read|CE reads in chunks|reduce kernel beside" $L/floors.txt | cut -c1-120
cd $OUT && tar czf logs.tgz logs && rm -rf logs
