#!/usr/bin/env bash
# s24 run09 (2 H200s): g (f with at least 4 segments on one node of two ranks) against f (48879da, at least 2) in turn: bf16 at the seven shapes and 4096x8192x4096, fp8 row-wise where f waited for the copies.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((290 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s24-run09.sh $L/run.sh
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672,4096x8192x4096
i=0
for x in "bf16 s24g --shapes $S" "bf16 s24f --shapes $S" "row s24g --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "row s24f --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "bf16 s24g --shapes $S" "bf16 s24f --shapes $S" "bf16 s24g --shapes $S"; do
	i=$((i+1)); set -- $x; n=$1; b=$2; shift 2; t0=$SECONDS
	[ $(left) -lt 45 ] && { echo "skip $n $b $i"; continue; }
	timeout 90 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$n-$b-$i.txt 2>&1
	echo "$n $b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$n-$b-$i.txt | awk '{printf "%s %s ", $1, $9}'; echo; grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/$n-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; grep -c "summed in the GEMM" $L/$n-$b-$i.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
