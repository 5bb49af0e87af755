#!/usr/bin/env bash
# s19 run06 (one H100, asked for as nvidia-h100-x1): issue 29's one-GPU comparisons on the other card, main (m):
# gemm_fp8.py per tensor, row-wise and block-wise at the four local shapes, each twice (the scalings in turn);
# then bench-mm (bf16 own GEMM against cuBLAS, both layouts of B).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cat $L/when.txt
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/m/libhiercoll.so RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
for i in 1 2; do for sc in tensor row block; do [ $(left) -lt 60 ] && { echo "skip $sc-$i"; continue; }; t0=$SECONDS
	timeout 120 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$sc-$i.txt 2>&1
	echo "$sc-$i rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-$i.txt | cut -c1-24,180-240; done; done
[ $(left) -gt 90 ] && { t0=$SECONDS; timeout 120 build/m/hiercoll bench-mm > $L/mm.txt 2>&1; echo "mm rc=$? $((SECONDS-t0))s"; tail -15 $L/mm.txt | cut -c1-200; }
cd $OUT && tar czf logs.tgz logs && rm -rf logs
