#!/usr/bin/env bash
# s33 run02 (one H200): where the block-wise consumers wait, in the kernel and in the thirty-first session's probe.
# Nsight Compute (clocks free; speed of light, warp states, scheduler, source counters), one launch each:
# the probe's quarters-promoted ring and per-tensor ring (TMA from L2, constant operands: run01 showed random ones the
# same per clock); main (m33 = e7fbc28) block-wise at 16896x256x65536 (one tile per CTA) and 8192x8192x7168, per tensor
# at 16896x256x65536. Each report's SASS source page kept as csv (gzip) for the stall summaries.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis"
mkdir -p /tmp/probe && cp benchmarks/results/2026-11-29-s31/run12-probe2.cu /tmp/probe/probe.cu
patch -s /tmp/probe/probe.cu benchmarks/results/pending/block-probe-data.diff && \
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1
echo "probe compile rc=$?"
report() {  # name
	ncu -i /tmp/prof-$1.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$1.csv.gz
	ncu -i /tmp/prof-$1.ncu-rep > $L/details-$1.txt 2>&1
	grep -E "^  [a-z_]|Elapsed Cycles|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible|Active Warps Per" $L/details-$1.txt | head -12
}
for x in "probe-q 5" "probe-t 1"; do set -- $x; t0=$SECONDS
	timeout 120 ncu --clock-control none --kernel-name regex:ring --launch-skip $2 --launch-count 1 $SEC -o /tmp/prof-$1 /tmp/probe/probe > $L/ncu-$1.txt 2>&1
	echo "ncu $1 rc=$? $((SECONDS-t0))s"; report $1; done
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m33/libhiercoll.so
for x in "block-1t block 16896x256x65536" "block-8k block 8192x8192x7168" "tensor-1t tensor 16896x256x65536"; do set -- $x; t0=$SECONDS
	timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 $SEC -o /tmp/prof-$1 \
		python3 benchmarks/torch/gemm_fp8.py --scaling $2 --shapes $3 --rounds 3 --iters 2 > $L/ncu-$1.txt 2>&1
	echo "ncu $1 rc=$? $((SECONDS-t0))s"; report $1; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
