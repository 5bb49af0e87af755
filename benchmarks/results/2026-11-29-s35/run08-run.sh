#!/usr/bin/env bash
# s35 run08 (one H200): exp/stmatrix without run07's spill: the compile-and-load test on two sources (smA: the
# staging's thread place as in main; smC: read again before the row scales too), the first without spills then
# checked against fp64 (TestGemmScalingsOnGPU) and timed beside main's head (m35) in turn, per tensor and
# block-wise, three processes each.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
V=
for v in smA smC; do t0=$SECONDS
	(cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-$v timeout 60 ../build/$v/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU' -test.v > $L/$v-load.txt 2>&1); rc=$?
	echo "$v load rc=$rc $((SECONDS-t0))s"; grep -E "spills|^(--- |ok|FAIL)" $L/$v-load.txt | head -3
	[ $rc -eq 0 ] && { V=$v; break; }
done
[ -z "$V" ] && { cd $OUT && tar czf logs.tgz logs && rm -rf logs; exit 0; }
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-$V timeout 90 ../build/$V/gemm.test -test.run 'TestGemmScalingsOnGPU' -test.v > $L/$V-scalings.txt 2>&1); echo "$V scalings rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)" $L/$V-scalings.txt | head -3
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 20 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 40 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,180-215
}
i=0
for b in $V m35 m35 $V $V m35; do i=$((i+1)); one tensor $b $S4 $i; done
for b in m35 $V $V m35 m35 $V; do i=$((i+1)); one block $b $S4 $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
