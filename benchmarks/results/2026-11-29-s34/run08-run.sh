#!/usr/bin/env bash
# s34 run08 (one H200): where the row-wise kernel's time goes beside the per-tensor one (m34 = bb5ee2b), Nsight Compute
# source counters, clocks free, one launch each at 4096x8192x2048 (K short: the epilogue's share is the largest).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
SEC="--section SpeedOfLight --section WarpStateStats --section SourceCounters"
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m34/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-m34
for x in "row-4k row" "tensor-4k tensor"; do set -- $x; t0=$SECONDS
	timeout 120 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 4 --launch-count 1 $SEC -o /tmp/prof-$1 \
		python3 benchmarks/torch/gemm_fp8.py --scaling $2 --shapes 4096x8192x2048 --rounds 3 --iters 2 > $L/ncu-$1.txt 2>&1
	echo "ncu $1 rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-$1.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$1.csv.gz
	ncu -i /tmp/prof-$1.ncu-rep > $L/details-$1.txt 2>&1
	grep -E "SM Frequency|Elapsed Cycles|Duration|Compute \(SM\)|Issue Slots|No Eligible" $L/details-$1.txt | head -8; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
