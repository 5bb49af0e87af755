#!/usr/bin/env bash
# s30 run08 (one H200): Nsight Compute source counters and warp states (one launch each) of main e84be44's (f)
# block-wise fp8 GEMM at 8192x8192x7168 and row-wise at 4096x8192x2048: where the warps stall now.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
for x in "block 8192x8192x7168" "row 4096x8192x2048"; do set -- $x; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/f/libhiercoll.so timeout 200 ncu --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis \
		-o /tmp/prof-$1 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $2 --rounds 3 --iters 2 > $L/ncu-$1.txt 2>&1
	echo "ncu $1 rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-$1.ncu-rep --page source --print-source sass --csv > $L/sass-$1.csv 2>&1
	ncu -i /tmp/prof-$1.ncu-rep > $L/details-$1.txt 2>&1
	grep -E "Elapsed Cycles|SM Active|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible" $L/details-$1.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
