#!/usr/bin/env bash
# s13 run05 (2 GPUs, nvidia-h200-x2: no 4-GPU kind was lent): b281821 ("new": the copy engine's pulls arrive through the pull kernel's handshake) —
# verify with the copy engine's pulls from the smallest blocks (registered) on 2 GPUs (both protocols);
# bench zero copy on 2 GPUs at 512 MiB / 1 GiB / 2 GiB against 2ea2da9 ("old"), old, new, new, old; the mixing
# probe on 2 GPUs (mixed.py).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
N=build/s13c O=build/s13b
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1 e=$2; shift 2; local t0=$SECONDS
	env $e timeout 90 $N/hiercoll verify --engine pull --register --ce-pull 1K "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-200)"; }
v verify-g2-ce CUDA_VISIBLE_DEVICES=0,1 --repeat 30
v verify-g2-ce-graphs CUDA_VISIBLE_DEVICES=0,1 --repeat 30 --graphs on
b() { local name=$1 bin=$2; local t0=$SECONDS
	CUDA_VISIBLE_DEVICES=0,1 timeout 100 $bin/hiercoll bench --engine pull --sizes 512M,1G,2G > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
b g2-old-1 $O
b g2-new-1 $N
b g2-new-2 $N
b g2-old-2 $O
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$N/libhiercoll.so
t0=$SECONDS; CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --nproc-per-node 2 $N/mixed.py > $L/mixed.txt 2>&1
echo "mixed rc=$? $((SECONDS-t0))s"; grep -E "^rank|\[rank" $L/mixed.txt | cut -c1-300 | head -8
cd $OUT && tar czf logs.tgz logs && rm -rf logs
