#!/usr/bin/env bash
# s33 run16 (one H200): Nsight Compute source counters (clocks free, one launch) of the probe's mode 19 (the kernel's own
# gm_mainloop_block in the probe's ring, run13-probe5.cu), to set beside run02's profile of the kernel with one tile per
# CTA: where the same mainloop code waits in each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp benchmarks/results/2026-11-29-s33/run13-probe5.cu /tmp/probe/probe.cu && cp gemm/gemm.cu /tmp/probe/gemm.cu
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "compile rc=$?"
export PROBE_ONLY="kernel's mainloop"
timeout 200 ncu --clock-control none --kernel-name regex:ring --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
	--section SourceCounters -o /tmp/prof-m19 /tmp/probe/probe > $L/ncu-m19.txt 2>&1; echo "ncu rc=$?"
ncu -i /tmp/prof-m19.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-m19.csv.gz
ncu -i /tmp/prof-m19.ncu-rep > $L/details-m19.txt 2>&1
grep -E "^  [a-z_]|Elapsed Cycles|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible" $L/details-m19.txt | head -8
cd $OUT && tar czf logs.tgz logs && rm -rf logs
