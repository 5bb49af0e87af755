#!/usr/bin/env bash
# s30 run02 (one H200): the block-wise fp8 GEMM in 64-column quarters, two register forms (q1: the quarters' scales
# multiplied once per k tile; q3: q1 with each stage's two descriptors offset per k step and quarter), since run01's
# first form spilled 8 bytes in its _odd kernel under CUDA 13. nvcc 13's ptxas -v of each; the clean ones' GEMM GPU
# tests; gemm_fp8.py --scaling block over the clean ones and main b41f346 (m0) in turn; GEMM + RS on 2 shared ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
ok=""
for v in q1 q3; do t0=$SECONDS
	nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/$v.cubin -x cu build/$v/gemm-q.cu > $L/nvcc-$v.txt 2>&1
	sp=$(grep -cE "[1-9][0-9]* bytes spill stores" $L/nvcc-$v.txt); c75=$(grep -c C75 $L/nvcc-$v.txt)
	cuobjdump -sass -fun hc_gemm_e4m3_bf16_nk_block /tmp/$v.cubin > $L/sass-$v-block.txt 2>&1
	echo "$v nvcc $((SECONDS-t0))s: kernels spilling $sp, C75 notes $c75, block QGMMA $(grep -c QGMMA $L/sass-$v-block.txt) DEPBAR $(grep -c 'WARPGROUP.DEPBAR' $L/sass-$v-block.txt)"
	[ "$sp" = 0 ] && [ "$c75" = 0 ] || continue
	t0=$SECONDS; (cd gemm && timeout 150 ../build/$v/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/$v-gemm-gpu-tests.txt 2>&1); rc=$?
	echo "$v gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic" $L/$v-gemm-gpu-tests.txt | head -8
	[ $rc -eq 0 ] && ok="$ok $v"
done
echo "clean and passing:$ok"
[ -z "$ok" ] && { cd $OUT && tar czf logs.tgz logs && rm -rf logs; exit 0; }
set -- $ok; first=$1; last=${!#}
order="$ok m0 m0"; for v in $ok; do order="$order"; done; order="$order $(echo $ok | tr ' ' '\n' | tac | tr '\n' ' ')"
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in $order; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-260; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
if [ $(left) -gt 50 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$first/libhiercoll.so HIERCOLL_DEVICE=0 timeout 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/$first-rs-shared-block.txt 2>&1
	echo "$first-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/$first-rs-shared-block.txt | head; fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
