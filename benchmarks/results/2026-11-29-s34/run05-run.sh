#!/usr/bin/env bash
# s34 run05 (one H200): where main's block-wise consumers wait now (m34 = bb5ee2b: uniform loop heads, P2).
# Nsight Compute, clocks free, one launch: block-wise at 8192x8192x7168 and 16896x256x65536 (one tile per CTA);
# the SASS source page kept (csv, gzip) for the stall summaries (s33's run02-stalls.py).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis"
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m34/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-m34
for x in "block-8k block 8192x8192x7168" "block-1t block 16896x256x65536"; do set -- $x; t0=$SECONDS
	timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 $SEC -o /tmp/prof-$1 \
		python3 benchmarks/torch/gemm_fp8.py --scaling $2 --shapes $3 --rounds 3 --iters 2 > $L/ncu-$1.txt 2>&1
	echo "ncu $1 rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-$1.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$1.csv.gz
	ncu -i /tmp/prof-$1.ncu-rep > $L/details-$1.txt 2>&1
	grep -E "SM Frequency|Elapsed Cycles|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible|Active Warps Per" $L/details-$1.txt | head -12; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
