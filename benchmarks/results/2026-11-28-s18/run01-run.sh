#!/usr/bin/env bash
# s18 run01 (4 GPUs): (a) branch exp/stage-in-last (build sil: consumer 1 stages its half in the tile's last
# stage) on GPU 0 for the first time: the GEMM's GPU tests, then gemm_fp8.py row-wise m, sil, sil, m and per
# tensor sil, m, bench-mm bf16 m, sil; (b) 4 GPUs at main (build m): bench zero copy at 32M..2G (1 GiB new on
# H200s), the pull engine's ring at 32 channels, the named ring under --max-symm 64M; (c) torch's async-TP beside
# hiercoll from two processes in a row (gemm_baseline.py --hiercoll), to see whether its time moves between processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
T0=$SECONDS
left() { [ $((SECONDS-T0)) -lt $1 ]; }
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 build/m/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
Z=32M,128M,512M,1G,2G
b zc-1 --sizes $Z
b ring32-1 --sizes $Z --ring-channels 32
b ring64m --sizes 128M,512M,2G --max-symm 64M --engine ring
echo "== sil at $((SECONDS-T0))s"
t0=$SECONDS; (cd gemm && CUDA_VISIBLE_DEVICES=0 timeout 150 ../build/sil/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/sil-gemm-gpu-tests.txt 2>&1); rc=$?
echo "sil gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spill|bytes stack|panic|error" $L/sil-gemm-gpu-tests.txt | head -20
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
p() { local name=$1 b=$2 sc=$3 t0=$SECONDS; left 440 || { echo "$name skipped"; return; }
	CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$name.txt 2>&1
	echo "$name rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$name.txt | cut -c1-34,240-262; }
mm() { local name=$1 b=$2 t0=$SECONDS
	CUDA_VISIBLE_DEVICES=0 timeout 100 build/$b/hiercoll bench-mm > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
if [ $rc = 0 ] && left 420; then
	p row-m-1 m row; p row-sil-1 sil row; p row-sil-2 sil row; p row-m-2 m row
	p tensor-sil-1 sil tensor; p tensor-m-1 m tensor
fi
echo "== torch at $((SECONDS-T0))s"
g() { local name=$1 t0=$SECONDS
	PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 90 torchrun --nproc-per-node 4 benchmarks/torch/gemm_baseline.py --hiercoll > $L/$name.txt 2>&1
	echo "$name rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$name.txt | cut -c1-110; }
left 480 && g torch-1; left 520 && g torch-2
echo "total $((SECONDS-T0))s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
