#!/usr/bin/env bash
# s13 run08 (2x H200, nvidia-h200-x2): ec85809 (the copy engine's arrival through pull()) — verify with the copy
# engine pulling every block (both protocols), the default verify, the mixing probe (mixed.py, as run05).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13f
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
s() { local name=$1 t=$2; shift 2; local t0=$SECONDS; timeout $t "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-160)"; }
s verify-ce 90 $B/hiercoll verify --engine pull --register --ce-pull 1K --repeat 30
s verify-ce-graphs 90 $B/hiercoll verify --engine pull --register --ce-pull 1K --repeat 30 --graphs on
s verify-auto 90 $B/hiercoll verify --repeat 30
s bench-2g 60 $B/hiercoll bench --sizes 512M,2G
t0=$SECONDS; timeout 100 torchrun --nproc-per-node 2 $B/mixed.py > $L/mixed.txt 2>&1
echo "mixed rc=$? $((SECONDS-t0))s"; grep -E "^rank" $L/mixed.txt | cut -c1-200
grep -E '^ +[0-9]{5,}' $L/bench-2g.txt | cut -c1-150
cd $OUT && tar czf logs.tgz logs && rm -rf logs
