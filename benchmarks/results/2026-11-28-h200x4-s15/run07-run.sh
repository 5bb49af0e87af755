#!/usr/bin/env bash
# s15 run07 (2 H200s): the session's final library (7b03ce6): zero copy, registered, copied in at 1 MiB-2 GiB,
# two rounds in turn; check_rs.py on 2 ranks; verify (Auto).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s15d
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
S=1M,4M,8M,32M,128M,512M,1G,2G
b zc-1 --sizes $S
b reg-1 --sizes $S --register
b ci-1 --sizes $S --copy-in
b zc-2 --sizes $S
b reg-2 --sizes $S --register
timeout 100 $B/hiercoll verify --calls 1 --repeat 100 > $L/verify-auto.txt 2>&1; echo "verify rc=$?"; tail -1 $L/verify-auto.txt
t0=$SECONDS; timeout 200 torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
	--shapes 4096x4096,16384x4096,65536x4096,131072x4096,262144x4096 > $L/check-rs-2.txt 2>&1; echo "check_rs rc=$? $((SECONDS-t0))s"
grep -E "NCCL / path|^ +bf16" $L/check-rs-2.txt | cut -c1-240
cd $OUT && tar czf logs.tgz logs && rm -rf logs
