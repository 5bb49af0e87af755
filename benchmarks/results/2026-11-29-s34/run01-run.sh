#!/usr/bin/env bash
# s34 run01 (one H200): bisect the block-wise kernel's six points under the probe's ring.
# (1) exp/block-bisect's library (build/bb, main's device code plus GM_VAR_* switches chosen by HIERCOLL_GEMM_VARIANT):
#     main / PWG2 (producer warpgroup last, as the probe's) / NOEPI (no epilogue, no storer: timing only, its check fails)
#     in turn, gemm_fp8.py --scaling block at the one-tile shapes (K 65536 and 131072: per k tile by difference) and 8192^2x7168.
# (2) the probe (s33's run13-probe5.cu + run17 diff + s34 diff: random operands in HBM with PROBE_RAND=1): the rings
#     from HBM, constant then random operands.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s34/probe.cu .s34/gemm.cu /tmp/probe/
(cd /tmp/probe && nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o probe probe.cu -lcuda > $L/probe-compile.txt 2>&1; echo "rc=$?" >> $L/probe-compile.txt) &
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/bb/libhiercoll.so
S=16896x256x65536,16896x256x131072,8192x8192x7168
i=0
for v in main PWG2 NOEPI NOEPI PWG2 main main NOEPI PWG2; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 130 ] && { echo "skip $v"; continue; }
	vv=$v; [ $v = main ] && vv=
	HIERCOLL_GEMM_VARIANT=$vv HIERCOLL_CACHE_DIR=/tmp/c-$v timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 5 --check-rows 16 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-50,180-250; done
wait
tail -3 $L/probe-compile.txt
for r in const rand; do
	[ $(left) -lt 25 ] && { echo "skip probe $r"; continue; }
	if [ $r = rand ]; then export PROBE_RAND=1; fi
	PROBE_ONLY="TMA from HBM" timeout 60 /tmp/probe/probe > $L/probe-$r.txt 2>&1; echo "probe $r rc=$?"; cat $L/probe-$r.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
