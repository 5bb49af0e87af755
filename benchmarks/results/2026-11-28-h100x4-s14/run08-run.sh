#!/usr/bin/env bash
# s14 run08 (4 GPUs): a50bb35 (the pull engine's ring for large calls, its defaults) — Auto beside --ring-from off
# (the path before: the pull) in turn, zero copy, copied in, registered; a context of blocks below 128 MiB (the
# narrow FIFOs); 3 GPUs; the named ring under 64 MiB (64 channels now); verify on 4 and 3 GPUs; check_rs.py on 4 ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14e
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 110 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant|symmetric memory' $L/$name.txt | cut -c1-150; }
v() { local name=$1; shift; local t0=$SECONDS
	env ${E:-X=0} timeout 150 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -3 $L/$name.txt; }
S=8M,32M,128M,256M,512M,1G,2G
b zc-new-1 --sizes $S
b zc-old-1 --sizes $S --ring-from off
b zc-old-2 --sizes $S --ring-from off
b zc-new-2 --sizes $S
b copyin-new --sizes $S --copy-in
b copyin-old --sizes $S --copy-in --ring-from off
b reg-new --sizes $S --register
b narrow-new --sizes 32M,64M,128M --copy-in
b narrow-old --sizes 32M,64M,128M --copy-in --ring-from off
E=CUDA_VISIBLE_DEVICES=0,1,2 b g3-new --sizes 32M,128M,512M,2G
E=CUDA_VISIBLE_DEVICES=0,1,2 b g3-old --sizes 32M,128M,512M,2G --ring-from off
b ring64m --engine ring --max-symm 64M --sizes 128M,512M,2G
v verify-auto
v verify-ring64k --ring-from 64K --dtypes bf16,int32
E=CUDA_VISIBLE_DEVICES=0,1,2 v verify-g3-ring64k --ring-from 64K --dtypes bf16,fp32,int32
t0=$SECONDS; timeout 200 torchrun --nproc-per-node 4 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,16384x4096,65536x4096,131072x4096,262144x4096 > $L/check-rs-4.txt 2>&1; echo "check_rs rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-4.txt | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
