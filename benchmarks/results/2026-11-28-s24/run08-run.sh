#!/usr/bin/env bash
# s24 run08 (2 H200s): where the storer's sum waits for the copies: f (48879da) against m (58efa29) in turn, fp8 row-wise and block-wise GEMM + RS and bf16 at K_local 2048 and 4096.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s24-run08.sh $L/run.sh
F=4096x8192x8192,8192x8192x8192,4096x8192x28672,16384x4096x14336
B=4096x8192x4096,8192x8192x4096,4096x4096x8192
for x in "row --input e4m3 --scaling row --shapes $F" "block --input e4m3 --scaling block --shapes $F" "bf16 --shapes $B"; do
for b in s24f s24m; do set -- $x; n=$1; shift; t0=$SECONDS
	[ $(left) -lt 30 ] && { echo "skip $n $b"; continue; }
	timeout 60 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$n-$b.txt 2>&1
	echo "$n $b rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$n-$b.txt | awk '{printf "%s gemm %s ovl %s seq %s ovl/bound %s | ", $1, $3, $9, $8, $12}'; echo; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
