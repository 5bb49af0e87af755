#!/usr/bin/env bash
# s20 run04 (4 GPUs, asked for nvidia-h100-x4): the standing figures at main (f092b6a, whose library is b54737d's; build m):
# ReduceScatter2D beside NCCL on 4 GPUs (zero copy twice, plain, registered, captured) and on 2 (zero copy,
# registered, plain), from PyTorch on 4 and 2 ranks, GEMM + RS at issue 30's seven shapes (bench-gemm, own GEMM),
# torch's async-TP beside hiercoll, fused fp8 row-wise, per tensor and block-wise on 4 ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/m
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
T0=$SECONDS
left() { [ $((SECONDS-T0)) -lt $1 ]; }
b() { local name=$1; shift; local t0=$SECONDS; left 520 || { echo "$name skipped"; return; }
	env ${E:-X=0} timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
S=1M,4M,8M,16M,32M,64M,128M,512M,1G,2G
b zc-1 --sizes $S
b ci-1 --sizes $S --copy-in
b reg-1 --sizes $S --register
b cap-1 --sizes 1M,4M,8M,32M,512M,2G --graphs on --capture
b zc-2 --sizes $S
E=CUDA_VISIBLE_DEVICES=0,1 b g2-zc-1 --sizes $S
E=CUDA_VISIBLE_DEVICES=0,1 b g2-reg-1 --sizes $S --register
E=CUDA_VISIBLE_DEVICES=0,1 b g2-ci-1 --sizes $S --copy-in
E=CUDA_VISIBLE_DEVICES=0,1 b g2-zc-2 --sizes $S
t0=$SECONDS; timeout 80 $B/hiercoll bench-gemm --gemm own --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 > $L/seven.txt 2>&1
echo "seven rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/seven.txt | cut -c1-220
f() { local name=$1 sc=$2; local t0=$SECONDS; left 540 || { echo "$name skipped"; return; }
	timeout 50 torchrun --nproc-per-node 4 benchmarks/torch/gemm_fp8.py --scaling $sc --rounds 3 --iters 10 > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/$name.txt | cut -c1-250; }
f rs4-row row
f rs4-tensor tensor
f rs4-block block
t0=$SECONDS; left 500 && { timeout 60 torchrun --nproc-per-node 4 benchmarks/torch/gemm_baseline.py --hiercoll > $L/torch-3.txt 2>&1
echo "torch-3 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/torch-3.txt | cut -c1-110; }
t0=$SECONDS; left 470 && { timeout 90 torchrun --nproc-per-node 4 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,16384x4096,32768x4096,65536x4096,262144x4096 > $L/check-rs-4.txt 2>&1; echo "check_rs 4 rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-4.txt | cut -c1-220; }
t0=$SECONDS; left 520 && { CUDA_VISIBLE_DEVICES=0,1 timeout 70 torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,16384x4096,65536x4096,131072x4096,262144x4096 > $L/check-rs-2.txt 2>&1; echo "check_rs 2 rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-2.txt | cut -c1-220; }
echo "total $((SECONDS-T0))s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
