#!/usr/bin/env bash
# s23 run04 (2 H200s): main's bench-gemm --gemm own at small shapes (2·M·N·K_local 1.7e10 .. 1.4e11 FLOP per rank), three runs enqueued and one captured: the overlapped and sequential paths beside each other, for Auto's threshold.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run04.sh $L/run.sh
S=1024x4096x4096,2048x4096x4096,1024x8192x4096,2048x8192x2048,4096x4096x4096,2048x4096x8192,4096x8192x2048,4096x8192x4096
i=0
for x in "enq" "cap" "enq" "cap" "enq" "cap"; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 90 ] && { echo "skip $x-$i"; continue; }
	a=""; [ $x = cap ] && a="--graphs on --capture"
	timeout 120 build/m/hiercoll bench-gemm --gemm own $a --shapes $S > $L/small-$x-$i.txt 2>&1
	echo "$x rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/small-$x-$i.txt | awk '{print $1, "gemm", $3, "gemm+rs", $8, "overlap", $9, "seq/ovl", $11, "pick", $16}'; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
