#!/usr/bin/env bash
# s22 run03 (2 H200s): rv (the reduce kernel walking from the last vector) checked (verify, copy and SM engines), then
# bench-gemm rv m2 rv m2 rv at issue 30's seven shapes (m2: main with the interleaved timing), then bench --engine copy.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run03.sh $L/run.sh
for e in copy sm; do timeout 100 build/rv/hiercoll verify --engine $e > $L/verify-rv-$e.txt 2>&1; echo "verify $e rc=$?"; tail -3 $L/verify-rv-$e.txt; done
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in rv m2 rv m2 rv; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 120 ] && { echo "skip $b-$i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$b-$i.txt | paste - - ; done
for b in rv m2; do [ $(left) -lt 60 ] && { echo "skip bench $b"; continue; }
	timeout 60 build/$b/hiercoll bench --engine copy --sizes 64M,1G > $L/bench-copy-$b.txt 2>&1; echo "bench $b rc=$?"; grep -E "^ *[0-9]+(\.[0-9]+)? ?[MG]" $L/bench-copy-$b.txt | head -4; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
