#!/usr/bin/env bash
# s26 run04 (nvidia-h200-x2): main's GEMM GPU tests (a01490c: the storer's queue full, never run on a GPU), then
# branch exp/summed-nowait rebased on a01490c (nw: a summed step's reduction stream does not wait for the own
# block's GEMM signals under the growing protocol) against main (m): bf16 nw m nw m nw m at issue 30's seven shapes
# and 4096x8192x4096, fp8 row-wise nw m, nw captured and replayable.
set -uo pipefail
source scripts/gpu-env.sh
tar xJf build/pk4.txz -C build
L=$OUT/logs; mkdir -p $L; cp .s26-run04.sh $L/run.sh
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 120 ../build/m/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU' -test.v > $L/m-gemm-gpu-tests.txt 2>&1); rc=$?
echo "m gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|queue|spills" $L/m-gemm-gpu-tests.txt | head -12
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672,4096x8192x4096
i=0
for x in "bf16 nw --shapes $S" "bf16 m --shapes $S" "row nw --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "row m --input e4m3 --scaling row --shapes 4096x8192x8192,8192x8192x8192" "bf16 m --shapes $S" "bf16 nw --shapes $S" "cap nw --graphs on --capture --reps 3 --shapes 2048x4096x4096,4096x8192x8192" "replay nw --graphs on --reps 3 --shapes 2048x4096x4096,4096x8192x8192" "bf16 nw --shapes $S" "bf16 m --shapes $S"; do
	i=$((i+1)); set -- $x; n=$1; b=$2; shift 2; t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $n $b $i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$n-$b-$i.txt 2>&1
	echo "$n $b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$n-$b-$i.txt | awk '{printf "%s %s | ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/$n-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
