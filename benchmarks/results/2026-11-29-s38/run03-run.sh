#!/usr/bin/env bash
# s38 run03 (one H200): dst2 (as run02's dst, each tile's rounded half held packed in 64 registers, but staged under
# the first k step of the next item whose barrier test finds the staging buffer free, not always the first: dst's
# consumer 1 waited there for the storer and drained the ring) against main with the A/B tool, per tensor, row-wise
# and bf16 at three shapes, 15 rounds, twice; kernel-check --nvrtc and --nvcc on dst2 first.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run03.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
for c in nvrtc nvcc; do
	scripts/kernel-check.sh build/ab/dst2.cu --$c > $L/kc-$c-dst2.txt 2>&1; echo "kc $c rc=$?"; tail -1 $L/kc-$c-dst2.txt
done
cd gemm
export HIERCOLL_GEMM_AB_ROUNDS=15 HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,tensor:16384x4096x3584,tensor:8192x8192x7168,row:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,bf16:4096x8192x2048,bf16:16384x4096x3584,bf16:8192x8192x7168
for i in 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab/dst2.cu timeout 120 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-dst2-$i.txt 2>&1
	echo "== dst2 $i rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-dst2-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
