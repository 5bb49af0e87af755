#!/usr/bin/env bash
# s33 run12 (one H200): the probe (.s33-probe4.cu: + one or two threads of other warps of the producer warpgroup waiting on a
# barrier through the whole ring, as the kernel's storer and scale loader do) beside the plain rings; 132 CTAs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe4.cu /tmp/probe/probe.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1
echo "compile rc=$? C75: $(grep -c C75 $L/probe-compile.txt)"; grep C75 $L/probe-compile.txt | grep -v "ILi2ELi" | head -3
export PROBE_ONLY="per tensor, TMA|quarters promoted, TMA"
for n in 132; do echo "== $n CTAs"; PROBE_CTAS=$n timeout 120 /tmp/probe/probe > $L/probe-$n.txt 2>&1; echo "rc=$?"; cat $L/probe-$n.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
