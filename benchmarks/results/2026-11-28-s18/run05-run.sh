#!/usr/bin/env bash
# s18 run05 (4 GPUs): experiment exp/pull-beside-gemm (build pb): GEMM + RS whose reduce-scatter pulls each signal
# segment from the peers beside the own GEMM (GEMM on the SMs the pull's 32 leave, segment-major, no stream-K)
# against main's overlapped path (the copy engine; build m), bench-gemm --gemm own at issue 30's seven shapes, in
# turn; then fp8 row-wise at bench-gemm's default shapes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
T0=$SECONDS
left() { [ $((SECONDS-T0)) -lt $1 ]; }
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS; left 400 || { echo "$name skipped"; return; }
	timeout 110 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round|rror|panic' $L/$name.txt | cut -c1-200; }
S7=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
g pb8-1 pb --pull-beside --segments 8 --shapes $S7
g ce-1 m --shapes $S7
g pb16-1 pb --pull-beside --segments 16 --shapes $S7
g fp8-pb8 pb --pull-beside --segments 8 --input e4m3 --scaling row
g fp8-ce m --input e4m3 --scaling row
echo "total $((SECONDS-T0))s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
