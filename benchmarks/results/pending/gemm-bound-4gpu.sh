#!/usr/bin/env bash
# What the twenty-second session left for a 4-GPU machine (none was lent): issue 30's GEMM + RS against its bound
# with bench-gemm's interleaved timing (each call from a meeting of the ranks, since 0661df7), main's build in
# build/m, three runs at the seven shapes and one captured (--graphs on --capture). The standing 4-GPU figures
# are the twentieth session's, timed a path at a time. Build hiercoll into build/m here, carry build/m, and run
# this from the repository root on nvidia-h200-x4 (or nvidia-h100-x4).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
for x in "m-1" "m-2" "cap-3 --graphs on --capture" "m-4"; do set -- $x; n=$1; shift; t0=$SECONDS
	[ $(left) -lt 130 ] && { echo "skip $n"; continue; }
	timeout 140 build/m/hiercoll bench-gemm --gemm own --shapes $S "$@" > $L/seven-$n.txt 2>&1
	echo "$n rc=$? $((SECONDS-t0))s"
	grep -oE '^[0-9]+x[0-9]+x[0-9]+ |ovl/bound by round [0-9.]+ \[[0-9.]+\.\.[0-9.]+\]' $L/seven-$n.txt | paste - - ; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
