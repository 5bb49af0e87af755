#!/usr/bin/env bash
# s25 run04 (2 H200s): exp/deferred-sums, the queue's head and the landed parity in shared memory (ds) against main 7260a10 (m).
# deferred while the peer's rows are late (the consumers never wait for a peer), built but never compiled for a GPU.
# Build here: the branch's hiercoll and gemm test binary into build/ds, main's hiercoll into build/m; carry both and
# run this from the repository root on nvidia-h200-x2. First the GEMM GPU tests (the kernels must compile without
# local memory, the sums bit for bit); then ds m ds m at issue 30's seven shapes plus the copy-bound bf16
# 4096x8192x4096, and fp8 row-wise at 4096x8192x8192 and 8192^3 (where main's sums waited for the copies:
# RESULTS, twenty-fourth session).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
cp scripts/.s25-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 150 ../build/ds/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU|TestGemmScalingsOnGPU' -test.v > $L/ds-gemm-gpu-tests.txt 2>&1); rc=$?
echo "ds gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spills" $L/ds-gemm-gpu-tests.txt | head -12
if ! grep -q -- "--- FAIL: TestGemmSumOnGPU" $L/ds-gemm-gpu-tests.txt; then
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672,4096x8192x4096
i=0
for x in "bf16 ds --shapes $S" "bf16 m --shapes $S" "row ds --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "row m --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "block ds --input e4m3 --scaling block --shapes 4096x8192x8192,8192x8192x8192" "block m --input e4m3 --scaling block --shapes 4096x8192x8192,8192x8192x8192" "bf16 ds --shapes $S" "bf16 m --shapes $S"; do
	i=$((i+1)); set -- $x; n=$1; b=$2; shift 2; t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $n $b $i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$n-$b-$i.txt 2>&1
	echo "$n $b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$n-$b-$i.txt | awk '{printf "%s %s ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/$n-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
