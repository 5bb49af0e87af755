#!/usr/bin/env bash
# s32 run06 (one H200): main 0507c40's block-wise and per-tensor kernels where each CTA takes one tile (16896x256x65536:
# 132 tiles, 512 k tiles each) or two (16896x512x32768), beside 8192x8192x7168: how much of the block-wise kernel's loss
# comes from the turns between tiles. gemm_fp8.py block, tensor, block, tensor; then Nsight Compute (clocks free,
# speed of light and compute workload, launches 5-6) of both kernels at 16896x256x65536.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=16896x256x65536,16896x512x32768,8192x8192x7168
i=0
for sc in block tensor block tensor; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/main/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$sc-main-$i.txt 2>&1
	echo "$sc main rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-main-$i.txt | cut -c1-50,180-240; done
for sc in block tensor; do t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/main/libhiercoll.so timeout 90 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 2 --section SpeedOfLight --section ComputeWorkloadAnalysis --csv \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 16896x256x65536 --rounds 3 --iters 2 > $L/ncu-main-$sc-onetile.csv 2> $L/ncu-main-$sc-onetile.err
	echo "ncu $sc rc=$? $((SECONDS-t0))s"; grep -oE "highest-utilized pipeline \([0-9.]+%\)" $L/ncu-main-$sc-onetile.csv; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
