#!/usr/bin/env bash
# s31 run03 (one H200): the quarters probe again with the last quarter carried across k tiles (every k tile, or
# drained every 2 / 4), and nvcc 13's ptxas on p (main with the block-wise last quarter carried, the first k tile
# peeled off the loop).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp build/probe2/probe2.cu $L/
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/p.cubin -x cu build/p/gemm-p.cu > $L/nvcc-p.txt 2>&1 &
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -Xptxas -v -o /tmp/probe2 build/probe2/probe2.cu > $L/compile.txt 2>&1; echo "nvcc rc=$?"
grep -E "C75|error|spill" $L/compile.txt | sed 's/Potential Performance Loss: wgmma.mma_async instructions are serialized due to//' | sort | uniq -c | head -20
cuobjdump -sass /tmp/probe2 | awk '/Function/{f=$0} /QGMMA/{n[f]++} /DEPBAR/{b[f]++} END{for(k in n) print n[k], b[k], k}' > $L/probe-sass-counts.txt; cat $L/probe-sass-counts.txt
timeout 150 /tmp/probe2 2>&1 | tee $L/probe.txt
wait
echo "p nvcc: C75 $(grep -c C75 $L/nvcc-p.txt)"; grep C75 $L/nvcc-p.txt | sed 's/Potential Performance Loss: wgmma.mma_async instructions are serialized due to//' | head -4
grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-p.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
cd $OUT && tar czf logs.tgz logs && rm -rf logs
