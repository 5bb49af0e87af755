#!/usr/bin/env bash
# s24 run05 (2 H200s): ss (exp/storer-sum, the storer given only cstage, returning after it, covers in one compare: the own block summed by the GEMM's storer, TMA loads of the peer's landed rows and TMA reduce-adds into the output) GPU tests; then bench-gemm --gemm own at the seven shapes ss m ss m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s24-run05.sh $L/run.sh
t0=$SECONDS; (cd gemm && timeout 150 ../build/s24s/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU|TestGemmScalingsOnGPU' -test.v > $L/ss-gemm-gpu-tests.txt 2>&1); rc=$?
echo "ss gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|local|spill" $L/ss-gemm-gpu-tests.txt | head -30
if [ $rc -eq 0 ]; then
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in s24s s24m s24s s24m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 100 ] && { echo "skip $b-$i"; continue; }
	timeout 120 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$b-$i.txt | awk '{printf "%s gemm %s overlap %s ovl/bound %s %s\n", $1, $3, $9, $12, $NF}'; grep -c "summed in the GEMM" $L/seven-$b-$i.txt; grep -iE "rror|fail" $L/seven-$b-$i.txt | head -3; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
