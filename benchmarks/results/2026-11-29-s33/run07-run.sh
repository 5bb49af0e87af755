#!/usr/bin/env bash
# s33 run04 (one H200): the probe (.s33-probe3.cu) with all 132 CTAs and with 66 and 33: whether the 128 x 128 tile's
# ring (mode 16) is held by L2's feed (then fewer CTAs each run faster) rather than by its own instructions.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe3.cu /tmp/probe/probe.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "compile rc=$?"
export PROBE_ONLY="per tensor|quarters promoted|promoted into 64|128x128 tile"
for n in 132 66 33; do echo "== $n CTAs"; PROBE_CTAS=$n timeout 120 /tmp/probe/probe > $L/probe-$n.txt 2>&1; echo "rc=$?"; cat $L/probe-$n.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
