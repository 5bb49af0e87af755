#!/usr/bin/env bash
# s20 run01 (4 GPUs): the own GEMM's sum in the epilogue (build f, branch fused-sum) on the GPU: gemm GPU tests
# (every kernel loads without spills; the sum against the unsummed product and the reduce kernel's bits);
# then bench-gemm --gemm own at issue 30's seven shapes, builds in turn f, m, m, f (m = main f092b6a).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cat $L/when.txt
run() { local name=$1 lim=$2; shift 2; [ $(left) -lt $((lim / 2)) ] && { echo "skip $name: $(left)s left"; return; }
	local t0=$SECONDS; timeout $lim "$@" > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
run f-gemm-gpu-tests 200 env CUDA_VISIBLE_DEVICES=0 build/f/gemm.test -test.run 'TestGemmSumOnGPU|TestGemmCompilesAndLoadsOnGPU' -test.v
grep -E '^(--- |ok|FAIL|PASS)|registers' $L/f-gemm-gpu-tests.txt | cut -c1-160 | head -40
grep -E '^\s+--- FAIL|Error' $L/f-gemm-gpu-tests.txt | head -20
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in f m m f; do i=$((i+1))
	run seven-$b-$i 130 build/$b/hiercoll bench-gemm --gemm own --shapes $S
	grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round|ovl' $L/seven-$b-$i.txt | cut -c1-220
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
