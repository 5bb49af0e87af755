#!/usr/bin/env bash
# s33 run01 (one H200): (1) the pending probe over constant vs random operands (benchmarks/results/pending/block-probe-data.sh);
# (2) the block-wise kernels' promotion FFMAs with their yield hint cleared in the cached CUBIN (.s33-yield.py: odd = every
# other FFMA of a run, all = every one), gemm_fp8.py --scaling block against main (m33 = e7fbc28) in turn; the caches'
# checksums before and after (a rejected entry would be recompiled and overwritten); then the GEMM GPU tests over the odd cache.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp benchmarks/results/2026-11-29-s31/run12-probe2.cu /tmp/probe/probe.cu
patch -s /tmp/probe/probe.cu benchmarks/results/pending/block-probe-data.diff && \
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1
echo "probe compile rc=$?"
timeout 90 /tmp/probe/probe > $L/probe.txt 2>&1; echo "probe rc=$?"; cat $L/probe.txt
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m33/libhiercoll.so
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336,8192x6144x7168
t0=$SECONDS; HIERCOLL_CACHE_DIR=/tmp/c-main timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-warm.txt 2>&1; echo "warm rc=$? $((SECONDS-t0))s"
for v in odd all; do cp -r /tmp/c-main /tmp/c-$v; for f in /tmp/c-$v/*.cubin; do python3 .s33-yield.py $f $v; done | tee $L/patch-$v.txt; done
sha256sum /tmp/c-*/*.cubin > $L/cache-before.txt
i=0
for v in odd main all all main odd main odd all; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 150 ] && { echo "skip $v"; continue; }
	HIERCOLL_CACHE_DIR=/tmp/c-$v timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$v-$i.txt 2>&1
	echo "block $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$v-$i.txt | cut -c1-50,180-240; done
sha256sum /tmp/c-*/*.cubin > $L/cache-after.txt
cmp $L/cache-before.txt $L/cache-after.txt && echo "caches unchanged"
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-odd timeout 150 ../build/m33/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU|TestGemmSumOnGPU' -test.v > $L/odd-gemm-gpu-tests.txt 2>&1); rc=$?
echo "odd gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/odd-gemm-gpu-tests.txt | head -8
sha256sum /tmp/c-odd/*.cubin > $L/cache-odd-after-tests.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
