#!/usr/bin/env bash
# s18 run06 (2 of 4 H200s): GEMM + RS on 2 GPUs at main (b54737d, build m): torch's mm, mm then NCCL and async-TP
# beside hiercoll in two processes (gemm_baseline.py --hiercoll), and bench-gemm --gemm own at issue 30's seven shapes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
export CUDA_VISIBLE_DEVICES=0,1 PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/m/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
for i in 1 2; do t0=$SECONDS; timeout 80 torchrun --nproc-per-node 2 benchmarks/torch/gemm_baseline.py --hiercoll > $L/g2-torch-$i.txt 2>&1
	echo "g2-torch-$i rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/g2-torch-$i.txt | cut -c1-110; done
t0=$SECONDS; timeout 120 build/m/hiercoll bench-gemm --gemm own --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 > $L/g2-seven.txt 2>&1
echo "g2-seven rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/g2-seven.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs && rm -rf logs
