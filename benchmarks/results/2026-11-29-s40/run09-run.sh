#!/usr/bin/env bash
# s40 run09 (one H200): Nsight Compute of exp/bk64's row-wise kernel (build bk) at 8192x8192x7168 and 4096x8192x2048,
# as run06 took main's: do its consumers still wait for their stages?
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run09.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bk/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-bk
SEC="--section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --section SpeedOfLight"
for shape in 8192x8192x7168 4096x8192x2048; do
	t0=$SECONDS; tag=bk-$shape
	timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 2 --launch-count 1 $SEC -o /tmp/prof-$tag \
		python3 .s40-peer.py own $shape > $L/ncu-$tag.txt 2>&1
	echo "ncu $tag rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-$tag.ncu-rep > $L/details-$tag.txt 2>&1
	ncu -i /tmp/prof-$tag.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$tag.csv.gz
	ncu -i /tmp/prof-$tag.ncu-rep --page raw --csv 2>&1 | gzip > $L/raw-$tag.csv.gz
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
