#!/usr/bin/env bash
# s23 run01 (2 H200s): bench-gemm op m op m op at issue 30's seven shapes (op: the own step reduces on the GEMM stream), then op with replayable signals and captured at two shapes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run01.sh $L/run.sh
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in op m op m op; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 130 ] && { echo "skip $b-$i"; continue; }
	timeout 160 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]|traced call.*' $L/seven-$b-$i.txt | paste - - - | cut -c1-250 ; done
for g in "--graphs on" "--graphs on --capture"; do t0=$SECONDS
	[ $(left) -lt 50 ] && { echo "skip graphs $g"; continue; }
	timeout 60 build/op/hiercoll bench-gemm --gemm own $g --shapes 4096x8192x8192,2048x4096x4096 > $L/graphs-op-${g// /_}.txt 2>&1
	echo "graphs $g rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x|ok|FAIL|error" $L/graphs-op-${g// /_}.txt | cut -c1-220 | head -8; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
