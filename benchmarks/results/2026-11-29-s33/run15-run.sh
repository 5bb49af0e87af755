#!/usr/bin/env bash
# s33 run15 (one H200): the thirty-second session's diagnostic ns (d354af1 on 0507c40: no scale reads, no scale
# loader; results wrong by design) with one tile per CTA (16896 x 256 x 131072) beside m33, Nsight Compute speed of
# light: whether the kernel's steady state below the probe's is its scale path where every k tile's scales come from HBM.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
for x in "ns 131072" "m33 131072" "ns 65536"; do set -- $x; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$1/libhiercoll.so timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 --section SpeedOfLight \
		python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 16896x256x$2 --rounds 3 --iters 2 --check-rows 16 > $L/ncu-block-$1-$2.txt 2>&1
	echo "ncu $1 K=$2 rc=$? $((SECONDS-t0))s"; grep -E "Elapsed Cycles|Compute \(SM\) Throughput" $L/ncu-block-$1-$2.txt | head -3; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
