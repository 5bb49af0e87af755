#!/usr/bin/env bash
# s27 run04 (nvidia-h200-x4): main at 2370a4f (build n, exp/sum4-rule landed; build lib its C ABI).
# bench-gemm --sum-own on at shapes with a column tail and odd row-tile counts, both signal protocols (the 4-block
# sum checked against NCCL); then GEMM + RS from PyTorch (gemm_baseline.py --hiercoll) on 4 ranks twice, 2 ranks once.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s27-run04.sh $L/run.sh
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
O=4096x8200x12288,6144x4096x16384,2048x8192x28672
for g in off on; do t0=$SECONDS
	timeout 80 build/n/hiercoll bench-gemm --gemm own --sum-own on --graphs $g --reps 3 --shapes $O > $L/on-graphs-$g.txt 2>&1
	echo "sum-own on, graphs $g rc=$? $((SECONDS-t0))s"; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $L/on-graphs-$g.txt | cut -c1-40,150-
done
export HIERCOLL_LIB=$PWD/build/lib/libhiercoll.so PYTHONPATH=$PWD/python
for x in "4 1 0,1,2,3" "2 1 0,1" "4 2 0,1,2,3"; do set -- $x; t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $x"; continue; }
	CUDA_VISIBLE_DEVICES=$3 timeout 100 torchrun --nproc-per-node $1 benchmarks/torch/gemm_baseline.py --hiercoll > $L/torch-g$1-$2.txt 2>&1
	echo "g$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x|spread' $L/torch-g$1-$2.txt | cut -c1-200; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
