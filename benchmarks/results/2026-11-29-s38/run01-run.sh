#!/usr/bin/env bash
# Pending (thirty-seventh session): issue 29's one-GPU fp8 figures at main's head, after `a940bdb` changed the row-wise
# epilogue (timed only with the A/B tool, against main; the README's row-wise and per-tensor rows are at `49f9f23`).
# One H200 (nvidia-h200): gemm_fp8.py row-wise, per tensor and block-wise in turn, three processes each, issue 29's
# four shapes (block-wise also 8192x6144x7168); about 2 minutes.
#
# Build here into the ignored build/ (carry build/r):
#   CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -buildmode=c-shared -o build/r/libhiercoll.so ./capi
# Run from the repository root: bash benchmarks/results/pending/fp8-standing-1gpu.sh
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((240 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
one() {  # one SCALING SHAPES TAG: one process; its shapes' lines (ratio column: _scaled_mm ÷ own)
	[ $(left) -lt 15 ] && { echo "skip $1 $3"; return; }
	HIERCOLL_LIB=$PWD/build/r/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-r timeout 60 python3 benchmarks/torch/gemm_fp8.py \
		--scaling $1 --shapes $2 --rounds 3 --iters 10 --check-rows 16 > $L/$1-$3.txt 2>&1
	echo "$1 $3 rc=$?"; grep -E '^ +[0-9]+x' $L/$1-$3.txt | cut -c1-45,181-200
}
i=0
for r in 1 2 3; do
	i=$((i+1)); one row $S4 $i
	i=$((i+1)); one tensor $S4 $i
	i=$((i+1)); one block $S4,8192x6144x7168 $i
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
