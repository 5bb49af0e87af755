#!/usr/bin/env bash
# s36 run02 (one H200): kernel-check --nvrtc (the library's own NVRTC 13.0) and --nvcc on main and on three
# stmatrix staging forms (build/v: x2, x4b, x4bt); the stmatrix forms that compile clean under the library's NVRTC
# timed beside main (m36) in turn, three processes each per scaling at the two shapes where run07 of the
# thirty-fifth session saw them ahead; then three more rounds of run01's row-wise bisection (m36 tensor, m36 row,
# rw, rn; one process per build and shape).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
t0=$SECONDS
for v in main x2 x4b x4bt; do timeout 120 scripts/kernel-check.sh build/v/$v.cu --nvrtc > $L/kc-nvrtc-$v.txt 2>&1 & done
timeout 120 scripts/kernel-check.sh build/v/main.cu --nvcc > $L/kc-nvcc-main.txt 2>&1 &
wait
echo "kernel checks $((SECONDS-t0))s"
for f in $L/kc-*.txt; do echo "$(basename $f): $(grep -v ' 0 spill stores' $f | grep -v '^NVRTC' | tail -3 | tr '\n' ' ' | cut -c1-400)"; done
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
one() {  # one SCALING BUILD SHAPES TAG
	local t0=$SECONDS
	[ $(left) -lt 30 ] && { echo "skip $1 $2 $4"; return; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$2 timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $3 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$2-$4.txt 2>&1
	echo "$1 $2 $4 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$4.txt | cut -c1-45,127-153,181-200
}
S2=16384x4096x3584,4096x8192x2048
i=0
for v in x4b x4bt; do
	grep -q "no kernel spills" $L/kc-nvrtc-$v.txt || { echo "$v spills under the library's NVRTC: not timed"; continue; }
	for sc in tensor row block; do for b in m36 $v $v m36 m36 $v; do i=$((i+1)); one $sc $b $S2 $i; done; done
done
for r in 4 5 6; do
	for s in 4096x8192x2048 16384x4096x3584; do
		for b in "tensor m36" "row m36" "row rw" "row rn"; do i=$((i+1)); one $b $s $i; done
	done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
