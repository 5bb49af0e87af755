#!/usr/bin/env bash
# s29 run07 (one H200): Nsight Compute with the clocks free over the ping-pong kernels (exp/pp-cluster, build pp,
# HIERCOLL_GEMM_PP=1 and 2) and main's (m), fp8 row-wise at 8192x8192x7168: where their tensor pipes idle.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.sum
for x in "m 0" "pp 1" "pp 2"; do set -- $x; t0=$SECONDS
	HIERCOLL_GEMM_PP=$2 HIERCOLL_LIB=$PWD/build/r5/$1/libhiercoll.so timeout 100 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 6 --launch-count 4 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-$1$2.csv 2> $L/ncu-$1$2.err
	echo "$1$2 rc=$? $((SECONDS-t0))s"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
