#!/usr/bin/env bash
# s29 run05 (one H200): the ping-pong fp8 kernels (branch exp/pp-cluster, build pp; HIERCOLL_GEMM_PP=1: the
# consumers take the tile's 128-column halves in turn; =2: the same in clusters of two CTAs sharing B's loads by
# TMA multicast): the GEMM GPU tests under each, then gemm_fp8.py --scaling row and tensor, m / pp1 / pp2 in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
ok=""
for v in 1 2; do t0=$SECONDS
	(cd gemm && HIERCOLL_GEMM_PP=$v timeout 150 ../build/r5/pp/gemm.test -test.run 'TestGemmScalingsOnGPU' -test.v > $L/pp$v-gemm-gpu-tests.txt 2>&1); rc=$?
	echo "pp$v gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- FAIL|ok|FAIL|PASS)|panic|_pp|Error" $L/pp$v-gemm-gpu-tests.txt | head -12
	[ $rc -eq 0 ] && ok="$ok $v"
done
echo "passed:$ok"
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for x in "row m 0" "row pp 1" "row pp 2" "tensor m 0" "tensor pp 1" "tensor pp 2" "row pp 2" "row pp 1" "row m 0"; do set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $x"; continue; }
	[ $3 != 0 ] && ! echo "$ok" | grep -q $3 && { echo "skip $x (tests)"; continue; }
	HIERCOLL_GEMM_PP=$3 HIERCOLL_LIB=$PWD/build/r5/$2/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2$3-$i.txt 2>&1
	echo "$1 $2$3 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2$3-$i.txt | cut -c1-44,166-260; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
