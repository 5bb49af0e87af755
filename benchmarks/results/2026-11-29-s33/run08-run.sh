#!/usr/bin/env bash
# s33 run05 (one H200): the probe (.s33-probe3.cu) with mode 17 (the 128 x 128 ring over six stages of 32 KiB) beside
# modes 16, 15 and the quarters, with 132 and 66 CTAs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe3.cu /tmp/probe/probe.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "compile rc=$?"
export PROBE_ONLY="quarters promoted|promoted into 64|128x128 tile"
for n in 132 66; do echo "== $n CTAs"; PROBE_CTAS=$n timeout 120 /tmp/probe/probe > $L/probe-$n.txt 2>&1; echo "rc=$?"; cat $L/probe-$n.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
