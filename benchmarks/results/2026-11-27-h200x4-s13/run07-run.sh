#!/usr/bin/env bash
# s13 run07 (2x H200, nvidia-h200-x2): 6ef6773 (the session's final code; 4cd22ac's library) — the standing rows on
# 2 GPUs after the copy engine's arrival change: `bench` (default: zero copy, the copy engine's pulls from 256 MiB
# blocks) at 1 MiB - 2 GiB, and check_rs.py from PyTorch on 2 ranks at 512 MiB / 1 GiB / 2 GiB (3 rounds).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13e
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; timeout 150 $B/hiercoll bench > $L/bench-2gpu.txt 2>&1; echo "bench rc=$? $((SECONDS-t0))s"
grep -E '^ +[0-9]{5,}' $L/bench-2gpu.txt | cut -c1-150
t0=$SECONDS; timeout 240 torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 16384x16384,16384x32768,32768x32768 > $L/check-rs-2gpu.txt 2>&1; echo "check_rs rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-2gpu.txt | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
