#!/usr/bin/env bash
# s29 run02 (one H200): the wgmma chain probe (build/probe/wgprobe.cu): how busy one or two warpgroups keep the
# tensor pipe with operands resident in shared memory.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp build/probe/wgprobe.cu $L/
rm -f /tmp/wgprobe; nvcc -gencode arch=compute_90a,code=sm_90a -O3 -Xptxas -v -o /tmp/wgprobe build/probe/wgprobe.cu > $L/compile.txt 2>&1; echo "nvcc rc=$?"
grep -E "C75|error|registers" $L/compile.txt | head -20
/tmp/wgprobe 2>&1 | tee $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
