#!/usr/bin/env bash
# s22 run07 (2 H200s): the torch scripts with their paths interleaved call by call from a meeting of the ranks
# (gemm_baseline.timed_interleaved): gemm_baseline.py --hiercoll twice, then gemm_fp8.py on 2 ranks, row-wise.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((280 - SECONDS)); }
export HIERCOLL_LIB=$PWD/build/py/libhiercoll.so PYTHONPATH=$PWD/python
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run07.sh $L/run.sh
run() { local name=$1 lim=$2; shift 2; [ $(left) -lt $((lim / 2)) ] && { echo "skip $name: $(left)s left"; return; }
	local t0=$SECONDS; timeout $lim "$@" > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
for i in 1 2; do run torch-$i 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_baseline.py --hiercoll; grep -E '^ +[0-9]+x|spread' $L/torch-$i.txt | cut -c1-220; done
run fp8-row 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672
tail -4 $L/fp8-row.txt | cut -c1-300
cd $OUT && tar czf logs.tgz logs && rm -rf logs
