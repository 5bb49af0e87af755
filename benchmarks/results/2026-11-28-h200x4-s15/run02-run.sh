#!/usr/bin/env bash
# s15 run02 (4 H200s): copied-in (plain) new/old in turn, registered, captured, 3 GPUs, PyTorch check_rs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15a
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
b() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
S=8M,16M,32M,64M,128M,512M,2G
b ci-new-1 --sizes $S --copy-in
b ci-old-1 --sizes $S --copy-in --ring-from 16M
b ci-old-2 --sizes $S --copy-in --ring-from 16M
b ci-new-2 --sizes $S --copy-in
b reg-new --sizes $S --register
b cap-new --sizes 1M,2M,4M,8M,32M,512M,2G --graphs on --capture
E=CUDA_VISIBLE_DEVICES=0,1,2 b g3-new --sizes 32M,128M,512M,2G
E=CUDA_VISIBLE_DEVICES=0,1 b g2-new --sizes 1M,8M,32M,512M,2G --register
t0=$SECONDS; timeout 200 torchrun --nproc-per-node 4 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,16384x4096,32768x4096,65536x4096,262144x4096 > $L/check-rs-4.txt 2>&1; echo "check_rs rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-4.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs && rm -rf logs
