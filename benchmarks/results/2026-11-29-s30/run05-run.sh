#!/usr/bin/env bash
# s30 run05 (one H200): s6 (s5 with the k tiles in pairs, the first's last quarter promoted beside the second's
# first) against s5 and main b41f346 (m0): nvcc 13's ptxas -v of s6 (tests if it spills nothing), gemm_fp8.py
# --scaling block s6 s5 m0 s5 s6; s5's GEMM + RS check on 2 shared ranks; row-wise and per-tensor m0 s5 s5 m0.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/s6.cubin -x cu build/s6/gemm-q.cu > $L/nvcc-s6.txt 2>&1
cuobjdump -sass -fun hc_gemm_e4m3_bf16_nk_block /tmp/s6.cubin > $L/sass-s6-block.txt 2>&1
echo "s6 nvcc $((SECONDS-t0))s: C75 $(grep -c C75 $L/nvcc-s6.txt); QGMMA $(grep -c QGMMA $L/sass-s6-block.txt) DEPBAR $(grep -c WARPGROUP.DEPBAR $L/sass-s6-block.txt); spilling:"
grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-s6.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for x in "block s6" "block s5" "block m0" "block s5" "block s6" "row m0" "row s5" "tensor m0" "tensor s5" "row s5" "row m0" "tensor s5" "tensor m0"; do
	set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 80 ] && { echo "skip $x"; continue; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
	echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-50,180-240; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
if [ $(left) -gt 45 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/s5/libhiercoll.so HIERCOLL_DEVICE=0 timeout 60 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/s5-rs-shared-block.txt 2>&1
	echo "s5-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "^rank .*(ok|FAILED)|FAILED|Error" $L/s5-rs-shared-block.txt | cut -c1-80; fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
