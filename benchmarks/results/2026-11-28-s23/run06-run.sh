#!/usr/bin/env bash
# s23 run06 (2 H200s): fs (exp/fused-sum rebased on main, exp/fused-sum-2: the own block summed in the GEMM epilogue; never timed on 2 GPUs) against m: bench-gemm --gemm own at the seven shapes, fs m fs m fs m (paths interleaved from a meeting of the ranks).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run06.sh $L/run.sh
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in fs m fs m fs m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 75 ] && { echo "skip $b-$i"; continue; }
	timeout 110 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ |traced call' $L/seven-$b-$i.txt | awk '/^[0-9]/{printf "%s gemm %s overlap %s ovl/bound %s %s | ", $1, $3, $9, $12, $NF} /traced/{print substr($0, index($0,"ends"), 120)}'; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
