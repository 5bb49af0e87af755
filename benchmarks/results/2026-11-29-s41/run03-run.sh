#!/usr/bin/env bash
# s41 run03 (one H200): the ping-pong kernels of exp/pp-d (s39 run09-pp-d-full.diff on main db4a8a1) timed against
# main's cooperative kernels in one process by the A/B tool (branch-local form: HIERCOLL_GEMM_AB=pp:N times the
# built-in kernels with HIERCOLL_GEMM_PP=N as the variant; unchecked, a differing C logged): pp (1), ppc (2, clusters
# sharing B), ppl (4, pp in clusters), pp again; row-wise and per tensor at five shapes, 9 rounds.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s41-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9 HIERCOLL_GEMM_AB_UNCHECKED=1 HIERCOLL_GEMM_AB_SRC=../build/ab40/ppd.cu
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:8192x8192x2048,row:4096x8192x4096,row:16384x4096x3584,row:8192x8192x7168,tensor:4096x8192x2048,tensor:16384x4096x3584,tensor:8192x8192x7168
cd gemm; i=0
for v in 1 2 4 1; do i=$((i+1)); t0=$SECONDS
	HIERCOLL_GEMM_PP=$v HIERCOLL_GEMM_AB=pp:$v timeout 240 ../build/ab40/pp.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-pp$v-$i.txt 2>&1
	echo "pp$v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differs|spill" $L/ab-pp$v-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | awk '{print $1, $(NF-1), $NF}'
done
