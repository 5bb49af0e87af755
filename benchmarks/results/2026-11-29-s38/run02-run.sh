#!/usr/bin/env bash
# s38 run02 (one H200): dst (each tile's rounded half held packed in 64 registers and staged under the next item's
# first k step's wgmmas; per tensor, row-wise and bf16 with the TMA store) against main with the A/B tool, the
# default 12 cases (block-wise unchanged: a control), 15 rounds, twice; kernel-check --nvrtc and --nvcc on dst
# first, then dst's GEMM GPU tests (gemm-dst.test, built with dst as gemm.cu: tails, stream-K, sums, no local memory).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run02.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
for c in nvrtc nvcc; do
	scripts/kernel-check.sh build/ab/dst.cu --$c > $L/kc-$c-dst.txt 2>&1; echo "kc $c rc=$?"; tail -1 $L/kc-$c-dst.txt
done
cd gemm
export HIERCOLL_GEMM_AB_ROUNDS=15
for i in 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab/dst.cu timeout 120 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-dst-$i.txt 2>&1
	echo "== dst $i rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-dst-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
unset HIERCOLL_GEMM_AB_ROUNDS
t0=$SECONDS; timeout 200 ../build/ab/gemm-dst.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/dst-gemm-gpu-tests.txt 2>&1
echo "dst gemm tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/dst-gemm-gpu-tests.txt | head
cd $OUT && tar czf logs.tgz logs && rm -rf logs
