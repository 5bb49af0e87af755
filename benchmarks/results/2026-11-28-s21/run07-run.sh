#!/usr/bin/env bash
# s21 run07 (one H200): Nsight Compute source counters and warp states of main's block-wise fp8 GEMM at
# 8192x8192x7168 (one launch), for where its warps stall.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
t0=$SECONDS
HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 240 ncu --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 \
	--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis \
	-o $L/prof-block python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-block.txt 2>&1
echo "ncu rc=$? $((SECONDS-t0))s"
ncu -i $L/prof-block.ncu-rep --page source --print-source sass --csv > $L/sass-block.csv 2>&1
ncu -i $L/prof-block.ncu-rep > $L/details-block.txt 2>&1
grep -E "Elapsed Cycles|SM Active|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible" $L/details-block.txt
rm $L/prof-block.ncu-rep
cd $OUT && tar czf logs.tgz logs && rm -rf logs
