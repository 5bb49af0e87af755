#!/usr/bin/env bash
# s30 run10 (one H200): the share of elapsed cycles the SMs hold a CTA (sm__cycles_active / sm__cycles_elapsed), own
# fp8 kernels (main e84be44, f) beside cuBLAS's under gemm_fp8.py at 4096x8192x2048 and 8192x8192x7168, row-wise and
# per tensor, clocks free.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,launch__grid_size
for sc in row tensor; do t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/f/libhiercoll.so timeout 100 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3|nvjet|sm90|cutlass|gemm" \
		--launch-skip 10 --launch-count 24 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 4096x8192x2048,8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-active-$sc.csv 2> $L/ncu-active-$sc.err
	echo "$sc rc=$? $((SECONDS-t0))s"; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
