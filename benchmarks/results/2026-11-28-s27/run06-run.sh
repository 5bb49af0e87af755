#!/usr/bin/env bash
# s27 run06 (nvidia-h200-x4): main at daa30ee (build n2). Signal segments per destination on 4 GPUs: bench-gemm at
# issue 30's seven shapes with the default (about one per 1024 rows, two where the GEMM may sum), --segments 4 and 8,
# in turn d 4 8 d 4 8: whether finer arrivals shorten the summed shapes' tail (the storers add the last peer's rows
# after it lands).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s27-run06.sh $L/run.sh
left() { echo $((400 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for x in 0 4 8 0 4 8; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 40 ] && { echo "skip $x"; continue; }
	timeout 80 build/n2/hiercoll bench-gemm --gemm own --segments $x --shapes $S > $L/seg$x-$i.txt 2>&1
	echo "seg$x $i rc=$? $((SECONDS-t0))s $(grep -h -E '^ *[0-9]+x[0-9]+x[0-9]+ ' $L/seg$x-$i.txt | grep -vc ' ok ')"
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/seg$x-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
