#!/usr/bin/env bash
# s25 run06 (2 H200s): e2 (e753a3a with a summed tile's signal after its sums again, from the queue) GPU tests,
# bench-gemm captured and replayable (run05's e hung there), then e2 m e2 m at the seven shapes and 4096x8192x4096,
# fp8 row-wise e2 m at 4096x8192x8192 and 8192^3.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((420 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s25-run06.sh $L/run.sh
t0=$SECONDS; (cd gemm && timeout 150 ../build/e2/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU|TestGemmScalingsOnGPU' -test.v > $L/e2-gemm-gpu-tests.txt 2>&1); rc=$?
echo "e2 gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spills" $L/e2-gemm-gpu-tests.txt | head -12
sh() { grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $1 | awk '{printf "%s overlap %s ovl/bound %s | ", $1, $9, $12}'; grep -oE "(ok|FAIL)[^|]*(summed in the GEMM)?" $1 | tr '\n' ' '; grep -iE "rror" $1 | head -2; echo; }
for x in "capture --graphs on --capture" "replay --graphs on" ; do set -- $x; t0=$SECONDS; n=$1; shift
	timeout 60 build/e2/hiercoll bench-gemm --gemm own "$@" --reps 3 --shapes 2048x4096x4096,4096x8192x8192 > $L/e2-gemm-$n.txt 2>&1; echo "e2 $n rc=$? $((SECONDS-t0))s"; sh $L/e2-gemm-$n.txt; done
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672,4096x8192x4096
i=0
for x in "bf16 e2 --shapes $S" "bf16 m --shapes $S" "row e2 --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "row m --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "bf16 e2 --shapes $S" "bf16 m --shapes $S"; do
	i=$((i+1)); set -- $x; n=$1; b=$2; shift 2; t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $n $b $i"; continue; }
	timeout 60 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$n-$b-$i.txt 2>&1
	echo "$n $b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$n-$b-$i.txt | awk '{printf "%s %s ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/$n-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
