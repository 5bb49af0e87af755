#!/usr/bin/env bash
# s38 run05 (one H200): the thirty-fifth session's stmatrix staging (16 stmatrix a thread a tile instead of 64
# st.shared and their addresses) on main's head, in five forms that differ only in how the staging address and the
# thread's place are found (smD: one base and a chunk key per thread; smE: smD with the place read again from
# %tid.x; smB: the thirty-fifth's form; smA: it with the place read again; smF: smE with the row-wise scales' place
# read again too): kernel-check --nvrtc (the library's NVRTC 13.0) on each; the first clean form timed against main
# with the A/B tool twice (12 default cases, 15 rounds) and its GEMM GPU tests run, the second clean form timed once.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s38-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
clean=()
for v in smD smE smB smA smF; do
	scripts/kernel-check.sh build/sm/$v.cu --nvrtc > $L/kc-nvrtc-$v.txt 2>&1; rc=$?; echo "kc $v rc=$rc"
	grep -E "stack frame" $L/kc-nvrtc-$v.txt | grep -v " 0 bytes stack" | cut -c1-110
	[ $rc = 0 ] && clean+=($v)
done
echo "clean: ${clean[*]}"
cd gemm
export HIERCOLL_GEMM_AB_ROUNDS=15
ab() {
	t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/sm/$1.cu timeout 120 ../build/sm/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$1-$2.txt 2>&1
	echo "== $1 $2 rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|differs|Error" $L/ab-$1-$2.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
}
[ ${#clean[@]} -eq 0 ] && clean=(smD)  # none clean: time the first form all the same (it spills a few bytes)
ab ${clean[0]} 1
[ ${#clean[@]} -gt 1 ] && ab ${clean[1]} 2
ab ${clean[0]} 3
unset HIERCOLL_GEMM_AB_ROUNDS
t0=$SECONDS; timeout 200 ../build/sm/gemm-${clean[0]}.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/${clean[0]}-gemm-gpu-tests.txt 2>&1
echo "${clean[0]} gemm tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|local memory|spill" $L/${clean[0]}-gemm-gpu-tests.txt | head
cd $OUT && tar czf logs.tgz logs && rm -rf logs
