#!/usr/bin/env bash
# s32 run05 (one H200): Nsight Compute. (1) main 0507c40's block-wise kernel at 8192x8192x7168 with the clocks free
# (speed of light, memory tables, compute workload; launches 5-6), as the thirty-first session's run09 took e84be44's.
# (2) the pending exp/pp-cluster diagnostic: warp states and source counters (one launch) of the ping-pong kernel
# (HIERCOLL_GEMM_PP=1, build pp) and of main's row-wise kernel at 8192x8192x7168: where the ping-pong's tensor pipe idles.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
for sc in block tensor; do t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/main/libhiercoll.so timeout 90 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --csv \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-main-$sc.csv 2> $L/ncu-main-$sc.err
	echo "ncu main $sc rc=$? $((SECONDS-t0))s $(wc -l < $L/ncu-main-$sc.csv) lines"; done
for x in "pp 1" "main 0"; do set -- $x; t0=$SECONDS
	HIERCOLL_GEMM_PP=$([ $2 = 1 ] && echo 1 || echo) HIERCOLL_LIB=$PWD/build/$1/libhiercoll.so timeout 180 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section ComputeWorkloadAnalysis \
		-o /tmp/prof-$1 python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-row-$1.txt 2>&1
	echo "ncu row $1 rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-$1.ncu-rep --page source --print-source sass --csv > $L/sass-row-$1.csv 2>&1
	ncu -i /tmp/prof-$1.ncu-rep > $L/details-row-$1.txt 2>&1
	grep -E "^  hc_gemm|Elapsed Cycles|SM Active|Compute \(SM\)|Issue Slots|Warp Cycles Per Issued|No Eligible" $L/details-row-$1.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
