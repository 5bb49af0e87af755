#!/usr/bin/env bash
# s27 run05 (nvidia-h200-x4): main at daa30ee (build n2; device code of 22c5c0b: the acquire load written once).
# The GEMM GPU tests; bench-gemm at issue 30's seven shapes once; then the reduce-scatter at 1-8 MiB per rank,
# zero copy, plain and captured (device time) in turn, three runs each on 4 GPUs and on 2 (GPUs 0 and 1).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s27-run05.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 170 ../build/n2/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU|TestGemmScalingsOnGPU' -test.v > $L/n2-gemm-gpu-tests.txt 2>&1); rc=$?
echo "gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/n2-gemm-gpu-tests.txt | head; grep "local memory" $L/n2-gemm-gpu-tests.txt | grep -vc " 0 bytes of local"
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
t0=$SECONDS; timeout 100 build/n2/hiercoll bench-gemm --gemm own --shapes $S > $L/g4-n2.txt 2>&1; echo "g4 rc=$? $((SECONDS-t0))s"
grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/g4-n2.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo
for g in 4 2; do for i in 1 2 3; do for m in plain cap; do t0=$SECONDS
	[ $(left) -lt 30 ] && { echo "skip g$g $m $i"; continue; }
	a=""; [ $m = cap ] && a="--graphs on --capture"
	timeout 60 build/n2/hiercoll bench --gpus $g --sizes 1M,2M,4M,8M $a > $L/rs-g$g-$m-$i.txt 2>&1
	echo "g$g $m $i rc=$? $((SECONDS-t0))s $(grep -E '^ +[0-9]+ ' $L/rs-g$g-$m-$i.txt | awk '{printf "%s ", $10}')"
done; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
