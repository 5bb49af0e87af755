#!/usr/bin/env bash
# s15 run09 (4 GPUs, nvidia-h100-x4): the session's final library (5ccd6c2): zero copy, copied in, registered at
# 1 MiB-2 GiB in turn; verify (Auto); check_rs.py on 4 ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15f
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 90 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
S=1M,8M,16M,32M,64M,128M,256M,512M,1G,2G
b zc --sizes $S
b ci --sizes $S --copy-in
b reg --sizes $S --register
timeout 60 $B/hiercoll verify --calls 1 --repeat 30 > $L/verify-auto.txt 2>&1; echo "verify rc=$?"; tail -1 $L/verify-auto.txt
t0=$SECONDS; timeout 100 torchrun --nproc-per-node 4 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,65536x4096,262144x4096 > $L/check-rs-4.txt 2>&1; echo "check_rs rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path" $L/check-rs-4.txt | cut -c1-240
cd $OUT && tar czf logs.tgz logs && rm -rf logs
