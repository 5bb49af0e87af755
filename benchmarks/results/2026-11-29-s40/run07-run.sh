#!/usr/bin/env bash
# s40 run07 (one H200): the own GEMM's walk group (row tiles taken at a time, gemm.DefaultGroup) at 8 (main 3ec7951,
# build h), 16 (g16) and 32 (g32): gemm_fp8.py row-wise and per tensor at issue 29's four shapes, builds in turn in
# a rotating order, three rounds. Nsight Compute (run06) read the own kernel's DRAM reads at 8192x8192x7168 as B read
# again for every group of 8 row tiles (635 MB against cuBLAS's 461).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run07.sh $L/run.sh
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
one() {  # one BUILD SCALING
	i=$((i+1))
	[ $(left) -lt 30 ] && { echo "skip $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/$1/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-k timeout 70 python3 benchmarks/torch/gemm_fp8.py \
		--scaling $2 --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/$2-$1-$i.txt 2>&1
	echo "$2 $1 $i rc=$?"; grep -E '^ +[0-9]+x' $L/$2-$1-$i.txt | awk '{print "  ", $1, $2, $6, $10, $15}'
}
for order in "h g16 g32" "g16 g32 h" "g32 h g16"; do
	for b in $order; do one $b row; done
	for b in $order; do one $b tensor; done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
