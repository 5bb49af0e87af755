#!/usr/bin/env bash
# s40 run06 (one H200): Nsight Compute (clocks free, one launch) of cuBLAS's fast row-wise fp8 kernel and of the own
# row-wise kernel (main 3ec7951, build h) at 8192x8192x7168 and 4096x8192x2048: launch statistics, pipes, memory
# throughputs (shared memory, L2), warp states, and the source page (SASS with warp samples) of cuBLAS's kernel.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run06.sh $L/run.sh; cp .s40-peer.py $L/peer.py
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h
SEC="--section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section SourceCounters --section SpeedOfLight"
prof() {  # prof PATH SHAPE REGEX
	local t0=$SECONDS tag=$1-$2
	timeout 170 ncu --clock-control none --kernel-name regex:$3 --launch-skip 2 --launch-count 1 $SEC -o /tmp/prof-$tag \
		python3 .s40-peer.py $1 $2 > $L/ncu-$tag.txt 2>&1
	echo "ncu $tag rc=$? $((SECONDS-t0))s"; tail -n 2 $L/ncu-$tag.txt
	ncu -i /tmp/prof-$tag.ncu-rep > $L/details-$tag.txt 2>&1
	ncu -i /tmp/prof-$tag.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$tag.csv.gz
	ncu -i /tmp/prof-$tag.ncu-rep --page raw --csv 2>&1 | gzip > $L/raw-$tag.csv.gz
}
prof cublas 8192x8192x7168 nvjet
prof own 8192x8192x7168 hc_gemm_e4m3
prof cublas 4096x8192x2048 nvjet
prof own 4096x8192x2048 hc_gemm_e4m3
cd $OUT && tar czf logs.tgz logs && rm -rf logs
