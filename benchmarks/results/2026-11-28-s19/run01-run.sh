#!/usr/bin/env bash
# s19 run01 (2 H200s): bench-gemm --gemm own at issue 30's seven shapes, main (m, c1d27c6) and the
# measurement after as many untimed calls of its path (w), in turn w m w; then zero copy at 1-2 GiB.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in w m w; do i=$((i+1)); [ $(left) -lt 150 ] && { echo "skip $b-$i: $(left)s left"; continue; }
	t0=$SECONDS; timeout 200 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1
	echo "seven-$b-$i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/seven-$b-$i.txt | cut -c1-230; done
for i in 1 2; do [ $(left) -lt 60 ] && { echo "skip zc-$i"; continue; }
	t0=$SECONDS; timeout 60 build/m/hiercoll bench --sizes 1G,2G > $L/zc-$i.txt 2>&1
	echo "zc-$i rc=$? $((SECONDS-t0))s"; tail -8 $L/zc-$i.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
