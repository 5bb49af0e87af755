#!/usr/bin/env bash
# s37 run05 (one H200): c2 (w0's release, three stages instead of four, and the 64 KiB that frees as a staging half
# per consumer: each consumer waits only for the storer to have read its own half of the tile before, not consumer 0's
# half of this tile) against main with the A/B tool, w0 between; kernel-check --nvrtc on c2 first. Order: c2, w0, c2.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/ab/c2.cu --nvrtc > $L/kc-nvrtc-c2.txt 2>&1; echo "kc c2 rc=$?"; grep -v " 0 spill loads" $L/kc-nvrtc-c2.txt | tail -4
cd gemm
i=0
for v in c2 w0 c2; do
	i=$((i+1)); t0=$SECONDS
	[ $SECONDS -gt 400 ] && { echo "skip $v"; continue; }
	HIERCOLL_GEMM_AB=../build/ab/$v.cu timeout 150 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "== $v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-$v-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
