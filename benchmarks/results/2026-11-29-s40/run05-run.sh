#!/usr/bin/env bash
# s40 run05 (nvidia-h200-x2): fused fp8 GEMM + RS on 2 ranks at main's head (3ec7951, build h; the row-wise
# epilogue's column scales changed in a940bdb since the thirty-seventh session's 2-GPU figures at 8bca25b), three
# processes per scaling in turn (gemm_fp8.py's default GEMM + RS shapes, 3 rounds of 10 calls), as s37 run01.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run05.sh $L/run.sh
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python
fused() {  # fused SCALING TAG
	local t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip fused $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h timeout 100 torchrun --nproc-per-node 2 \
		benchmarks/torch/gemm_fp8.py --scaling $1 --rounds 3 --iters 10 > $L/rs2-$1-$2.txt 2>&1
	echo "fused $1 rc=$? $((SECONDS-t0))s"; grep -E "^ *[0-9]+x" $L/rs2-$1-$2.txt | cut -c1-250
}
i=0
for r in 1 2 3; do for sc in row block tensor; do i=$((i+1)); fused $sc $i; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
