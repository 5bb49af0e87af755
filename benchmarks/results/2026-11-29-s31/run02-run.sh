#!/usr/bin/env bash
# s31 run02 (one H200): the quarters probe (build/probe2/probe2.cu): the block-wise mainloop's ceiling in a ring of
# 4 stages with no memory traffic, beside the per-tensor mainloop, with the producer keeping pace or late.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp build/probe2/probe2.cu $L/
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -Xptxas -v -o /tmp/probe2 build/probe2/probe2.cu > $L/compile.txt 2>&1; echo "nvcc rc=$?"
grep -E "C75|error|spill" $L/compile.txt | sort | uniq -c | head -20
timeout 120 /tmp/probe2 2>&1 | tee $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
