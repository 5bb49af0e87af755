#!/usr/bin/env bash
# s33 run14 (one H200): m33's block-wise kernel with one tile per CTA at K = 65536 and 131072 (16896 x 256 x K), Nsight
# Compute speed of light (clocks free, one launch each): whether the kernel's share below the probe's is a fixed cost
# per launch (it would shrink as K doubles) or its steady state.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m33/libhiercoll.so
for x in "block 65536" "block 131072" "tensor 131072"; do set -- $x; t0=$SECONDS
	timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 --section SpeedOfLight \
		python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes 16896x256x$2 --rounds 3 --iters 2 --check-rows 16 > $L/ncu-$1-$2.txt 2>&1
	echo "ncu $1 K=$2 rc=$? $((SECONDS-t0))s"; grep -E "Elapsed Cycles|Duration|Compute \(SM\) Throughput" $L/ncu-$1-$2.txt | head -4; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
