#!/usr/bin/env bash
# s38 run06 (one H200): rs2, the row-wise epilogue multiplying by the row scale first and then by the column scale
# (d·sa·sb instead of d·(sa·sb): 128 of its 256 multiplies need no column scale's load), against main with the A/B
# tool unchecked (its products differ from main's in the last bit by design), row-wise at three shapes and per tensor
# at one (unchanged: a control), 15 rounds, twice; kernel-check --nvrtc on rs2 first, then rs2's GEMM GPU tests
# (every row-wise tail against fp64, the summed path, no local memory).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/rs/rs2.cu --nvrtc > $L/kc-nvrtc-rs2.txt 2>&1; echo "kc rs2 rc=$?"; tail -1 $L/kc-nvrtc-rs2.txt | cut -c1-120
cd gemm
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,row:16384x4096x3584,row:8192x8192x7168,tensor:4096x8192x2048 HIERCOLL_GEMM_AB_ROUNDS=15 HIERCOLL_GEMM_AB_UNCHECKED=1
for i in 1 2; do
	t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/rs/rs2.cu timeout 100 ../build/rs/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-rs2-$i.txt 2>&1
	echo "== rs2 $i rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-rs2-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
unset HIERCOLL_GEMM_AB_CASES HIERCOLL_GEMM_AB_ROUNDS HIERCOLL_GEMM_AB_UNCHECKED
t0=$SECONDS; timeout 200 ../build/rs/gemm-rs2.test -test.run 'TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/rs2-gemm-gpu-tests.txt 2>&1
echo "rs2 gemm tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/rs2-gemm-gpu-tests.txt | head
cd $OUT && tar czf logs.tgz logs && rm -rf logs
