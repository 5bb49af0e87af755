#!/usr/bin/env bash
# s31 run08 (one H200): c (main 1c0c9a0 with block-wise tiles 192 columns wide, each consumer's rows as two n96
# halves in two temporaries, one promoted while the other runs) against main m1: nvcc 13's ptxas -v, the GEMM GPU
# tests with c (scalings, sums), gemm_fp8.py --scaling block c m1 m1 c c m1, the GEMM + RS check on 2 shared ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((480 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
for v in c; do t0=$SECONDS
	nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/$v.cubin -x cu build/$v/gemm-$v.cu > $L/nvcc-$v.txt 2>&1
	echo "$v nvcc $((SECONDS-t0))s: C75 $(grep -c C75 $L/nvcc-$v.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-$v.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
	cuobjdump -sass -fun hc_gemm_e4m3_bf16_nk_block /tmp/$v.cubin > $L/sass-$v-block.txt 2>&1; # (kept as its counts: sass-$v-block-counts.txt) echo "QGMMA $(grep -c QGMMA $L/sass-$v-block.txt) DEPBAR $(grep -c DEPBAR $L/sass-$v-block.txt) LDSM $(grep -c LDSM $L/sass-$v-block.txt) LDL $(grep -c LDL $L/sass-$v-block.txt)"
	t0=$SECONDS; (cd gemm && timeout 200 ../build/$v/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/$v-gemm-gpu-tests.txt 2>&1); rc=$?
	echo "$v gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/$v-gemm-gpu-tests.txt | head -8
done
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in c m1 m1 c c m1; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 50 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-260; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
if [ $(left) -gt 45 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/c/libhiercoll.so HIERCOLL_DEVICE=0 timeout 60 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/c-rs-shared-block.txt 2>&1
	echo "c-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/c-rs-shared-block.txt | head; fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
