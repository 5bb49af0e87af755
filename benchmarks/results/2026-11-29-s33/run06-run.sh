#!/usr/bin/env bash
# s33 run03 (one H200): the probe with two more rings (.s33-probe3.cu: the thirty-first session's run12 probe, s32's
# random operands, and modes 12/13: no promotion, but each quarter / half a new chain into two temporaries in turn):
# whether restarting chains into alternating temporaries, not the promotions' FFMAs, costs the quarters their 17%.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe3.cu /tmp/probe/probe.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1
echo "probe compile rc=$? C75: $(grep -c C75 $L/probe-compile.txt)"; grep C75 $L/probe-compile.txt | head
cuobjdump -sass /tmp/probe/probe | awk '/Function :/ {f=$3} /QGMMA/ {n[f]++} END {for (k in n) print n[k], k}' | tee $L/qgmma-counts.txt
timeout 120 /tmp/probe/probe > $L/probe.txt 2>&1; echo "probe rc=$?"; cat $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
