#!/usr/bin/env bash
# s23 run08 (2 H200s): fs3 (exp/fused-sum-2 + the storer's L2 prefetch of a summed tile's landed rows, all of a thread's chunks in two rounds on 2 ranks): its GEMM kernels' registers and local memory, then bench-gemm --gemm own at the seven shapes fs3 m fs3 m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((400 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run08.sh $L/run.sh
t0=$SECONDS; (cd gemm && timeout 60 ../build/fs3/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU' -test.v > $L/fs3-gemm-loads.txt 2>&1); echo "loads rc=$? $((SECONDS-t0))s"; grep -E "e4m3_bf16_nk:|bf16_nk:|PASS|FAIL" $L/fs3-gemm-loads.txt | head -5
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in fs3 m fs3 m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $b-$i"; continue; }
	timeout 110 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ |traced call' $L/seven-$b-$i.txt | awk '/^[0-9]/{printf "%s gemm %s overlap %s ovl/bound %s %s | ", $1, $3, $9, $12, $NF} /traced/{print substr($0, index($0,"ends"), 60)}'; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
