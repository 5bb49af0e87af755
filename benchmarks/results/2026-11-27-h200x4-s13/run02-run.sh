#!/usr/bin/env bash
# s13 run02 (4 GPUs): 2ead070 — bench at a misaligned input (copied in, pull; sm), the Go path's host cost with a
# CPU profile (HIERCOLL_CPUPROFILE), the Python tests on one rank.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
b() { local name=$1; shift; local t0=$SECONDS
	timeout 150 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-200; }
b bench-copyin-off2 --engine pull --copy-in --input-offset 2 --sizes 32M,128M,512M
b bench-copyin-off0 --engine pull --copy-in --sizes 32M,128M,512M
b bench-sm-off2 --engine sm --copy-in --input-offset 2 --sizes 32M,128M
t0=$SECONDS; HIERCOLL_CPUPROFILE=$L/hostcost.prof timeout 90 $B/hiercoll bench --host-cost --reps 3000 > $L/hostcost.txt 2>&1; echo "hostcost rc=$? $((SECONDS-t0))s"; cat $L/hostcost.txt | tail -3
t0=$SECONDS; timeout 280 python3 -m pytest -q python/tests > $L/py-1.txt 2>&1; echo "py-1 rc=$? $((SECONDS-t0))s: $(tail -n 1 $L/py-1.txt)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
