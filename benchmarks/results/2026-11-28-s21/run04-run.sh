#!/usr/bin/env bash
# s21 run04 (one H200): c2 = c with the peer's stage arrivals released at CTA scope (run03: coupling alone, c1,
# cost as much as c): c2's GEMM GPU tests, then gemm_fp8.py per tensor c2 m c2, row-wise c2 m, block-wise c2 m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 220 ../build/c2/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/c2-gemm-gpu-tests.txt 2>&1); rc=$?
echo "c2 gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|panic|rror" $L/c2-gemm-gpu-tests.txt | head -20
if [ $rc -eq 0 ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
	i=0
	for x in "tensor c2" "tensor m" "tensor c2" "row c2" "row m" "block c2" "block m"; do set -- $x; i=$((i+1)); t0=$SECONDS
		[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-24,180-230; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
