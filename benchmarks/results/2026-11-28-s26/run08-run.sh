#!/usr/bin/env bash
# s26 run08 (nvidia-h200-x4): the standing ReduceScatter2D figures re-measured at main a01490c (build m; the plain
# reduce-scatter's code is the same at the session's later commits): hiercoll bench zero copy on 2 of the 4 GPUs (0 and 1), three times
# if time allows, beside NCCL in the same processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s26-run08.sh $L/run.sh
left() { echo $((290 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=1M,4M,8M,32M,128M,512M,1G,2G
for n in g2-zc-1 g2-zc-2 g2-zc-3; do t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $n"; continue; }
	CUDA_VISIBLE_DEVICES=0,1 timeout 100 build/m/hiercoll bench --sizes $S > $L/$n.txt 2>&1; echo "$n rc=$? $((SECONDS-t0))s"; grep -E "^ *[0-9]+(\.[0-9]+)? ?[KMG]i?B" $L/$n.txt | cut -c1-160 | head -12; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
