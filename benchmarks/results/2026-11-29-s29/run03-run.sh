#!/usr/bin/env bash
# s29 run03 (one H200): the block-wise fp8 GEMM with A's scales through a shared-memory ring filled by cp.async two
# k tiles ahead (build b, branch exp/block-scales-smem) against main (m): b's GEMM GPU tests, then gemm_fp8.py
# --scaling block b m m b, then the GEMM + RS check on 2 ranks sharing the GPU with b.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 200 ../build/b/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/b-gemm-gpu-tests.txt 2>&1); rc=$?
echo "b gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spill|panic|local|registers|error" $L/b-gemm-gpu-tests.txt | head -30
if [ $rc -eq 0 ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
	i=0
	for x in "block b" "block m" "block m" "block b"; do set -- $x; i=$((i+1)); t0=$SECONDS
		[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-50,180-260; done
	unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
	for sc in block; do [ $(left) -lt 60 ] && continue; t0=$SECONDS
		HIERCOLL_LIB=$PWD/build/b/libhiercoll.so HIERCOLL_DEVICE=0 timeout 120 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
			--shared-gpu --scaling $sc --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/b-rs-shared-$sc.txt 2>&1
		echo "b-rs-shared-$sc rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/b-rs-shared-$sc.txt | head; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
