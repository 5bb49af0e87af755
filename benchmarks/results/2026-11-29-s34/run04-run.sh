#!/usr/bin/env bash
# s34 run04 (one H200): main's head bb5ee2b (m34: E5 + P2 landed) against the session's start 2e51565 (m33), in turn:
# gemm_fp8.py block (5 shapes), row and tensor (4 shapes), three processes each; the GEMM GPU tests on m34; Nsight
# Compute's SpeedOfLight (SM frequency, tensor pipe) for m34's block and tensor kernels at 8192^2x7168, clocks free.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S5=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 200 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-245
}
i=0
for b in m33 m34 m34 m33 m33 m34; do i=$((i+1)); one block $b $S5 $i; done
for b in m34 m33 m33 m34 m34 m33; do i=$((i+1)); one row $b $S4 $i; done
for b in m33 m34 m34 m33 m33 m34; do i=$((i+1)); one tensor $b $S4 $i; done
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-m34 timeout 170 ../build/m34/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/m34-gemm-gpu-tests.txt 2>&1); rc=$?
echo "m34 gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/m34-gemm-gpu-tests.txt | head -8
for sc in block tensor; do t0=$SECONDS
	[ $(left) -lt 45 ] && { echo "skip ncu $sc"; continue; }
	HIERCOLL_LIB=$PWD/build/m34/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-m34 timeout 60 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 2 --section SpeedOfLight --csv \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-m34-$sc.csv 2> $L/ncu-m34-$sc.err
	echo "ncu m34 $sc rc=$? $((SECONDS-t0))s"; grep -E '"SM Frequency|Compute \(SM\) Throughput|"Duration' $L/ncu-m34-$sc.csv | cut -d, -f12- | head -6; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
