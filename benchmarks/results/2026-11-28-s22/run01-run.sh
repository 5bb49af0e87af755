#!/usr/bin/env bash
# s22 run01 (2 H200s): the reduce kernel's rate (probe), then bench-gemm iv m iv at issue 30's seven shapes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((575 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run01.sh $L/run.sh
(cd scripts && timeout 90 /usr/local/cuda/bin/nvcc -arch=sm_90a -O3 -o /tmp/rb .s22-rbench.cu) > $L/rbench-build.txt 2>&1; echo "nvcc rc=$?"
CUDA_VISIBLE_DEVICES=0 timeout 60 /tmp/rb > $L/rbench.txt 2>&1; echo "rb rc=$?"; cat $L/rbench.txt
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in iv m iv; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 150 ] && { echo "skip $b-$i"; continue; }
	timeout 170 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "$b rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$b-$i.txt | paste - - ; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
