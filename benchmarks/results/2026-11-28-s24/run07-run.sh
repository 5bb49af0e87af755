#!/usr/bin/env bash
# s24 run07 (2 H200s): f (48879da, exp/storer-sum as landed: the device code of run06's st) GPU tests; bench-gemm captured and replayable, fp8 row-wise and block-wise GEMM + RS checks; the Python package's tests; then bench-gemm --gemm own at the seven shapes f m f m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((430 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s24-run07.sh $L/run.sh
t0=$SECONDS; (cd gemm && timeout 150 ../build/s24f/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU' -test.v > $L/f-gemm-gpu-tests.txt 2>&1); rc=$?
echo "f gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spills" $L/f-gemm-gpu-tests.txt | head -8
sh() { grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $1 | awk '{printf "%s overlap %s ovl/bound %s | ", $1, $9, $12}'; grep -oE "(ok|FAIL)[^|]*(summed in the GEMM)?" $1 | tr '\n' ' '; grep -iE "rror" $1 | head -2; echo; }
for x in "capture --graphs on --capture" "replay --graphs on" ; do set -- $x; t0=$SECONDS; n=$1; shift
	timeout 90 build/s24f/hiercoll bench-gemm --gemm own "$@" --reps 3 --shapes 2048x4096x4096,4096x8192x8192 > $L/f-gemm-$n.txt 2>&1; echo "f $n rc=$? $((SECONDS-t0))s"; sh $L/f-gemm-$n.txt; done
for sc in row block; do t0=$SECONDS
	timeout 90 build/s24f/hiercoll bench-gemm --gemm own --input e4m3 --scaling $sc --reps 3 --shapes 4096x8192x8192,2048x8192x28672 > $L/f-fp8-$sc.txt 2>&1; echo "f fp8 $sc rc=$? $((SECONDS-t0))s"; sh $L/f-fp8-$sc.txt; done
t0=$SECONDS; PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/s24f/libhiercoll.so timeout 120 python3 -m pytest -q python/tests > $L/f-py.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0))s"; tail -2 $L/f-py.txt
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in s24f s24m s24f s24m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $b-$i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"; grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/seven-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; grep -c "summed in the GEMM" $L/seven-$b-$i.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
