#!/usr/bin/env bash
# s33 run17 (one H200): the probe's mode 19 (the kernel's own mainloop) with the probe's 196 KiB of shared memory and
# with the kernel's whole GM_SMEM (L1 left as small as in the kernel), from L2 and from HBM in the one-tile shape
# (.s33-probe6.cu = run13-probe5.cu + those two rings).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe6.cu /tmp/probe/probe.cu && cp gemm/gemm.cu /tmp/probe/gemm.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "compile rc=$?"
export PROBE_ONLY="kernel's mainloop"
timeout 150 /tmp/probe/probe > $L/probe.txt 2>&1; echo "rc=$?"; cat $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
