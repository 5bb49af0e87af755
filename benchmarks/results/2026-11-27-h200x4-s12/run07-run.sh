#!/usr/bin/env bash
# s12 run07 (4x H200): 6dc74f6 (layout tags) on GPUs: verify --engine pull (4 GPUs; under --max-symm 64M;
# --register; 2 GPUs), bench --copy-in at 128 MiB and 512 MiB (rounds, pieces), and mixed.py (ranks mixing
# rs.input and their own tensors: allowed copied in whole, stopped in rounds).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/r7/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 120 build/r7/hiercoll verify --engine pull --repeat 30 "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt)"; }
v verify-g4 X=0
v verify-g4-max64 X=0 --max-symm 64M
v verify-g4-register X=0 --register
v verify-g2 CUDA_VISIBLE_DEVICES=0,1
t0=$SECONDS; timeout 100 build/r7/hiercoll bench --engine pull --copy-in --sizes 128M,512M,1G > $L/g4-copyin.txt 2>&1
echo "g4-copyin rc=$? $((SECONDS-t0))s: $(grep -E '^ +[0-9]{5,}' $L/g4-copyin.txt | awk '{printf "%s/%s err %s; ", $4, $7, $11}')"
t0=$SECONDS; timeout 120 torchrun --nproc-per-node 4 build/r7/mixed.py > $L/mixed.txt 2>&1
echo "mixed rc=$? $((SECONDS-t0))s"; grep -E "^rank" $L/mixed.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
