#!/usr/bin/env bash
# s15 run08 (2 GPUs): registered inputs in an allocation 16 bytes past whole 2 MiB pages with the new rule (the copy
# engine pulls only registrations of whole pages; `hiercoll-plus16`: the library with the rule, the benchmark's old
# allocation) beside the library without it (`hiercoll-before-plus16`: s15a) and the final build (whole pages),
# in turn; verify --register with the copy engine pulling every block (both allocations).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15e
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name --format=csv >> $L/when.txt 2>&1
b() { local name=$1 x=$2; shift 2; local t0=$SECONDS
	timeout 100 $B/$x bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|symmetric memory' $L/$name.txt | cut -c1-150; }
S=512M,1G,2G
b rule-plus16-1 hiercoll-plus16 --sizes $S --register
b before-plus16-1 hiercoll-before-plus16 --sizes $S --register
b rule-whole-1 hiercoll --sizes $S --register
b rule-whole-2 hiercoll --sizes $S --register
b before-plus16-2 hiercoll-before-plus16 --sizes $S --register
b rule-plus16-2 hiercoll-plus16 --sizes $S --register
for x in hiercoll hiercoll-plus16; do
  timeout 100 $B/$x verify --register --ce-pull 1K --one-shot off --calls 1 --repeat 30 > $L/verify-reg-$x.txt 2>&1; echo "verify $x rc=$?"; tail -1 $L/verify-reg-$x.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
