#!/usr/bin/env bash
# s21 run01 (one H200): the GEMM kernels in clusters of two CTAs sharing B's tile by TMA multicast (build c,
# branch exp/cluster2) against main (m): c's GEMM GPU tests, then gemm_fp8.py row-wise c m m c, per tensor c m,
# block-wise c m, then the GEMM + RS check on 2 ranks sharing the GPU with c.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 220 ../build/c/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/c-gemm-gpu-tests.txt 2>&1); rc=$?
echo "c gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spill|panic|local|registers|rror" $L/c-gemm-gpu-tests.txt | head -40
if [ $rc -eq 0 ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
	i=0
	for x in "row c" "row m" "row m" "row c" "tensor c" "tensor m" "block c" "block m"; do set -- $x; i=$((i+1)); t0=$SECONDS
		[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-24,180-230; done
	unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
	for sc in row; do [ $(left) -lt 60 ] && continue; t0=$SECONDS
		HIERCOLL_LIB=$PWD/build/c/libhiercoll.so HIERCOLL_DEVICE=0 timeout 120 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
			--shared-gpu --scaling $sc --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/c-rs-shared-$sc.txt 2>&1
		echo "c-rs-shared-$sc rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/c-rs-shared-$sc.txt | head; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
