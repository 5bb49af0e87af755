#!/usr/bin/env bash
# s21 run02 (one H200): why the clusters of two (c) ran at 0.6x main (run01): Nsight Compute's launch statistics of
# c's and main's row-wise kernel at 4096x8192x2048 beside cuBLAS's, then c0 (clusters launched, nothing shared,
# no coupling) against m and c with gemm_fp8.py per tensor.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for x in "tensor c0" "tensor m" "tensor c" "tensor c0"; do set -- $x; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
	HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 90 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
	echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-24,180-230; done
for b in c m; do [ $(left) -lt 100 ] && continue; t0=$SECONDS
HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 150 ncu --kernel-name regex:'hc_gemm_e4m3|nvjet' --launch-skip 0 --launch-count 3 \
	--section SpeedOfLight --section LaunchStats --section Occupancy \
	-o $L/prof-$b python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 4096x8192x2048 --rounds 1 --iters 1 > $L/ncu-run-$b.txt 2>&1
echo "ncu $b rc=$? $((SECONDS-t0))s"
ncu -i $L/prof-$b.ncu-rep > $L/ncu-details-$b.txt 2>&1
grep -E "^  [a-z_0-9]+.*\(|Duration|Elapsed Cycles|Cluster|Registers Per|Grid Size|Block Size|Waves|Compute \(SM\) Throughput|Memory Throughput|Achieved Occ" $L/ncu-details-$b.txt | head -60
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
