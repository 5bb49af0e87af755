#!/usr/bin/env bash
# s31 run14 (one H200): u against m1 again (run13 read u 7-9% ahead block-wise): gemm_fp8.py --scaling block
# m1 u u m1 m1 u, then the GEMM + RS check with block scales on 2 ranks sharing the GPU with u.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((230 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in m1 u u m1 m1 u; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 50 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 40 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-240; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
if [ $(left) -gt 40 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/u/libhiercoll.so HIERCOLL_DEVICE=0 timeout 45 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/u-rs-shared-block.txt 2>&1
	echo "u-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/u-rs-shared-block.txt | cut -c1-120 | head; fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
