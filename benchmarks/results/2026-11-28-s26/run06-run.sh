#!/usr/bin/env bash
# s26 run06 (nvidia-h200-x4): GEMM + RS from PyTorch with main's library at 6e...(summed-nowait merged):
# gemm_baseline.py --hiercoll on 4 ranks twice, then on 2 ranks (GPUs 0 and 1) twice.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s26-run06.sh $L/run.sh
left() { echo $((330 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export HIERCOLL_LIB=$PWD/build/lib/libhiercoll.so PYTHONPATH=$PWD/python
for x in "4 1 0,1,2,3" "2 1 0,1" "4 2 0,1,2,3" "2 2 0,1"; do set -- $x; t0=$SECONDS
	[ $(left) -lt 50 ] && { echo "skip $x"; continue; }
	CUDA_VISIBLE_DEVICES=$3 timeout 90 torchrun --nproc-per-node $1 benchmarks/torch/gemm_baseline.py --hiercoll > $L/torch-g$1-$2.txt 2>&1
	echo "g$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x|spread' $L/torch-g$1-$2.txt | cut -c1-200; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
