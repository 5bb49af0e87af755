#!/usr/bin/env bash
# s23 run05 (2 H200s): fn (Fork/Merge without the p2p stream) against m: bench-gemm --gemm own at small shapes enqueued and 4096x8192x8192 / 8192^3, fn m fn m fn m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run05.sh $L/run.sh
S=2048x4096x4096,1024x8192x4096,4096x4096x4096,4096x8192x4096,4096x8192x8192,8192x8192x8192
i=0
for b in fn m fn m fn m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $b-$i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own --mode overlap --shapes $S > $L/gemm-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ |host enqueue' $L/gemm-$b-$i.txt | awk '/^[0-9]/{printf "%s gemm %s gemm+rs %s overlap %s ovl/bound %s ", $1, $3, $8, $9, $12} /host enqueue/{print "enq", $(NF-2)}'; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
