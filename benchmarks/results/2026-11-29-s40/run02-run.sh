#!/usr/bin/env bash
# Pending (thirty-ninth session): where the own row-wise fp8 kernel loses after an idle gap and cuBLAS's gains
# (results/2026-11-29-s39 run04: at 4096x8192x2048 cuBLAS's row-wise kernel 6% faster after a 512 MiB write than back
# to back, the own row-wise kernel 3% slower). rowwise_idle.py times both, and the per-tensor pair, after the host's
# round trip only, spins of 20 / 100 / 500 us more and an L2 flush, in two processes. One H200 (any Hopper). Not yet
# run: written without a GPU (torch.cuda._sleep is torch's private spin kernel; check that it still exists first).
#
# Build here into the ignored build/ (carry build/h):
#   CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -buildmode=c-shared -o build/h/libhiercoll.so ./capi
# Run from the repository root: bash benchmarks/results/pending/rowwise-idle-1gpu.sh
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp "$0" $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h
for i in 1 2; do t0=$SECONDS
	timeout 200 python3 benchmarks/results/pending/rowwise_idle.py > $L/idle-$i.txt 2>&1
	echo "idle $i rc=$? $((SECONDS-t0))s"; grep -v -E "socket|^\[" $L/idle-$i.txt | cut -c1-240
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
