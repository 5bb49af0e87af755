#!/usr/bin/env bash
# s32 run08 (one H200): two diagnostic builds on 0507c40 against main, timing only (their results are wrong, so
# gemm_fp8.py stops after each process's one shape): ns (no scale reads, no scale loader: the full barrier waits for
# the TMA alone) and np (ns with no promotion either: the quarters' wgmmas, waits and fences alone).
# gemm_fp8.py --scaling block, one shape a process, ns np main main np ns per shape.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
i=0
for S in 8192x8192x7168 8192x8192x14336 16896x256x65536; do
for v in ns np main main np ns; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 15 ] && { echo "skip $v $S"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 40 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s $(grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-50,180-225)"; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
