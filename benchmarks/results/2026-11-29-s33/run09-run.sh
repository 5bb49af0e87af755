#!/usr/bin/env bash
# s33 run06 (one H200): the probe (.s33-probe3.cu) with its stages loaded from HBM in the kernel's one-tile shape
# (A 16896 x 65536, B 256 x 65536, each CTA its own 128 rows of A; WRITES 3) beside the L2-resident rings: whether
# streaming A from HBM takes the quarters from the probe's 83% to the kernel's 76%.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe3.cu /tmp/probe/probe.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "compile rc=$?"
export PROBE_ONLY="per tensor, TMA|quarters promoted, TMA|promoted into 64"
timeout 150 /tmp/probe/probe > $L/probe.txt 2>&1; echo "rc=$?"; cat $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
