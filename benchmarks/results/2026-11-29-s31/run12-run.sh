#!/usr/bin/env bash
# s31 run12 (one H200): the quarters probe with each stage loaded by TMA from L2-resident A and B (the GEMM loader's
# boxes) beside the stages resident: per tensor, quarters, A from registers, halves, 64 x 192, chains unpromoted.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp build/probe2/probe2.cu $L/
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -Xptxas -v -o /tmp/probe2 build/probe2/probe2.cu -lcuda > $L/compile.txt 2>&1; echo "nvcc rc=$?"
grep -E "C75|error|spill" $L/compile.txt | sed 's/Potential Performance Loss: wgmma.mma_async instructions are serialized due to//' | sort | uniq -c | head -20
cuobjdump -sass /tmp/probe2 | awk '/Function/{f=$0} /QGMMA/{n[f]++} /DEPBAR/{b[f]++} /LDSM/{l[f]++} END{for(k in n) print n[k], b[k], l[k]+0, k}' > $L/probe-sass-counts.txt; cat $L/probe-sass-counts.txt
timeout 150 /tmp/probe2 2>&1 | tee $L/probe.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
