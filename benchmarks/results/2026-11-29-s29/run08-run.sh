#!/usr/bin/env bash
# s29 run08 (one H200): Nsight Compute with the clocks free over gemm_fp8.py --scaling block at 8192x8192x7168 (main,
# m): the own block-wise kernel's tensor pipe beside cuBLAS's block-wise kernel's.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
t0=$SECONDS
HIERCOLL_LIB=$PWD/build/r5/m/libhiercoll.so timeout 150 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3|nvjet|sm90|cutlass|gemm" \
	--launch-skip 10 --launch-count 24 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-block.csv 2> $L/ncu-block.err
echo "rc=$? $((SECONDS-t0))s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
