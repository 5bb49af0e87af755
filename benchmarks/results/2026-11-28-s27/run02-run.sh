#!/usr/bin/env bash
# s27 run02 (nvidia-h200-x4): exp/sum4-rule at c3508e8, the storer's spill fixed (build r; run01 found 8 bytes in the row kernels) and
# beside main 117ef2a (build m). GEMM GPU tests of r; bench-gemm at issue 30's seven shapes on
# 4 GPUs: r auto, r off, m, m, r off, r auto; then 2 GPUs (--gpus 2): r, m, m, r (the two-block sum now goes through
# the reworked queue); then r auto under the replayable protocol, captured and replayed.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s27-run02.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 170 ../build/r/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU|TestGemmScalingsOnGPU' -test.v > $L/r-gemm-gpu-tests.txt 2>&1); rc=$?
echo "r gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spills|local memory" $L/r-gemm-gpu-tests.txt | grep -v " 0 bytes of local" | head -20
if grep -q -- "--- FAIL" $L/r-gemm-gpu-tests.txt || [ $rc -ne 0 ]; then cd $OUT && tar czf logs.tgz logs && rm -rf logs; exit 1; fi
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
pr() { grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $1 | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; }
i=0
for x in "r auto" "r off" "m auto" "m auto" "r off" "r auto"; do set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
	a=""; [ $1 = r ] && a="--sum-own $2"
	timeout 100 build/$1/hiercoll bench-gemm --gemm own --shapes $S $a > $L/g4-$1-$2-$i.txt 2>&1
	echo "g4 $x $i rc=$? $((SECONDS-t0))s"; pr $L/g4-$1-$2-$i.txt
done
for x in r m m r; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip g2 $x"; continue; }
	timeout 100 build/$x/hiercoll bench-gemm --gpus 2 --gemm own --shapes $S > $L/g2-$x-$i.txt 2>&1
	echo "g2 $x $i rc=$? $((SECONDS-t0))s"; pr $L/g2-$x-$i.txt
done
for g in "cap --capture" "replay"; do set -- $g; n=$1; shift
	[ $(left) -lt 40 ] && continue
	timeout 60 build/r/hiercoll bench-gemm --gemm own --graphs on --reps 3 --shapes 16384x4096x14336,4096x8192x8192 "$@" > $L/$n-r.txt 2>&1; echo "$n r rc=$?"; tail -4 $L/$n-r.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
