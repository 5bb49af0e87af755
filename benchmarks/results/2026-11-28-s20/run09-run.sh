#!/usr/bin/env bash
# s20 run09: GEMM + RS with each segment's arrival raised after its copy and the own step's reduction per segment
# (build n, branch exp/seg-reduce) against main (m): bench-gemm --gemm own at issue 30's seven shapes, n, m, m, n.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cat $L/when.txt
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in n m m n; do i=$((i+1))
	[ $(left) -lt 60 ] && { echo "skip $b-$i"; continue; }
	t0=$SECONDS; timeout 120 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$b-$i.txt 2>&1; echo "seven-$b-$i rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$b-$i.txt | awk '{print $1, $9, $12}' | tr '\n' ';'; echo
	grep -E 'traced call' $L/seven-$b-$i.txt | sed 's/.*ends/ends/' | cut -c1-110
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
