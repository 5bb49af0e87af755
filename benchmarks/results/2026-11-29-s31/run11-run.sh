#!/usr/bin/env bash
# s31 run11 (one H200): z against m1 again (run10 read z 0.4-1.4% ahead block-wise): gemm_fp8.py --scaling block
# m1 z z m1 m1 z, then row z m1 m1 z.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((280 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in m1:block z:block z:block m1:block m1:block z:block z:row m1:row m1:row z:row; do i=$((i+1)); t0=$SECONDS; v=${b%%:*}; sc=${b##*:}
	[ $(left) -lt 25 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 50 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$sc-$v-$i.txt 2>&1
	echo "$sc $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-$v-$i.txt | cut -c1-50,180-240; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
