#!/usr/bin/env bash
# Pending (one H200, about 2 minutes, nothing to build here): the thirty-first session's probe of the block-wise
# mainloop over constant operands (e4m3 1.0, as its run12) and random ones, beside the per-tensor mainloop, stages by
# TMA from L2. The thirty-second session found the kernel's block-wise mainloop keeping the tensor pipe busy 76% of
# the time with one tile per CTA where this probe reached 83% (and 96% against 93.5% per tensor): whether random data
# take the probe down to the kernel's figure decides whether that gap is the data's (power) or the kernel's structure.
# Run from the repository root; logs under $OUT/logs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp benchmarks/results/2026-11-29-s31/run12-probe2.cu /tmp/probe/probe.cu
patch -s /tmp/probe/probe.cu benchmarks/results/pending/block-probe-data.diff || exit 1
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/compile.txt 2>&1
echo "compile rc=$?"
timeout 60 /tmp/probe/probe | tee $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
