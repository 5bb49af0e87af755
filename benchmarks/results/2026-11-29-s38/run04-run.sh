#!/usr/bin/env bash
# s38 run04 (one H200): does the bf16 rounding's throughput set the epilogue's cost? cv25 / cv50 / cv100 round a
# quarter / half / all of each consumer's bf16 pairs with integer instructions on the ALU pipe (the same bits:
# to nearest, ties to even) instead of cvt.rn.bf16x2.f32 (F2FP), so that the two pipes share the work; A/B against
# main, fp8 per tensor and row-wise and bf16 at the epilogue-heavy shapes, 15 rounds; cv25 and cv50 twice.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
for v in cv25 cv50 cv100; do
	scripts/kernel-check.sh build/ab/$v.cu --nvrtc > $L/kc-nvrtc-$v.txt 2>&1; echo "kc $v rc=$?"; tail -1 $L/kc-nvrtc-$v.txt | cut -c1-120
done
cd gemm
export HIERCOLL_GEMM_AB_ROUNDS=15 HIERCOLL_GEMM_AB_CASES=tensor:4096x8192x2048,tensor:16384x4096x3584,tensor:8192x8192x7168,row:4096x8192x2048,row:16384x4096x3584,bf16:4096x8192x2048,bf16:16384x4096x3584
for v in cv25 cv50 cv100 cv50 cv25; do
	i=$((${i:-0}+1)); t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab/$v.cu timeout 100 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "== $v $i rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-$v-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
