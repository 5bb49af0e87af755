#!/usr/bin/env bash
# s17 run08 (one H200): gemm_fp8.py's own one-GPU shapes (bench-mm's local shapes), row-wise, 3c56e26 (s17f) and
# main at the session's start (s17m) in turn, f, m, m, f; per tensor f, m.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
p() { local name=$1 b=$2 sc=$3 t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --rounds 3 --iters 10 > $L/$name.txt 2>&1
	echo "$name $b $sc rc=$? $((SECONDS-t0))s"; }
p row-f-1 s17f row
p row-m-1 s17m row
p row-m-2 s17m row
p row-f-2 s17f row
p tensor-f-1 s17f tensor
p tensor-m-1 s17m tensor
for f in $L/row-*.txt $L/tensor-*.txt; do echo "== $(basename $f)"; grep -E '^ +[0-9]+x' $f | cut -c1-140; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
