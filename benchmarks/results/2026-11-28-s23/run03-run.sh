#!/usr/bin/env bash
# s23 run03 (one H200): rs (the row-wise scale loader's loads issued at once, before its wait): GEMM GPU tests, then gemm_fp8.py row-wise rs m rs m rs m, per tensor rs m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run03.sh $L/run.sh
t0=$SECONDS; (cd gemm && timeout 200 ../build/rs/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/rs-gemm-gpu-tests.txt 2>&1); rc=$?
echo "rs gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|panic|rror|local" $L/rs-gemm-gpu-tests.txt | head -30
if [ $rc -eq 0 ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x8192x2048
	i=0
	for x in "row rs" "row m" "row rs" "row m" "row rs" "row m" "tensor rs" "tensor m"; do set -- $x; i=$((i+1)); t0=$SECONDS
		[ $(left) -lt 50 ] && { echo "skip $x"; continue; }
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-50,78-103,220-255; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
