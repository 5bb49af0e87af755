#!/usr/bin/env bash
# s40 run10 (nvidia-h200-x4, lent late in the session with about 10 minutes of device time left): main's head
# (3ec7951's code, build h) on 4 GPUs: fused fp8 GEMM + RS with each scaling (gemm_fp8.py, 4 ranks) and bench-gemm's
# own-GEMM GEMM + RS at issue 30's seven shapes; the pending gemm-rs-after-s34-4gpu.sh cut to main's head only.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run10.sh $L/run.sh
left() { echo $((470 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python
fused() {  # fused SCALING TAG
	local t0=$SECONDS
	[ $(left) -lt 55 ] && { echo "skip fused $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h timeout 80 torchrun --nproc-per-node 4 \
		benchmarks/torch/gemm_fp8.py --scaling $1 --rounds 3 --iters 10 > $L/rs4-$1-$2.txt 2>&1
	echo "fused $1 rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/rs4-$1-$2.txt | cut -c1-250
}
seven() {  # seven TAG
	local t0=$SECONDS
	[ $(left) -lt 85 ] && { echo "skip seven"; return; }
	HIERCOLL_CACHE_DIR=/tmp/c-h timeout 90 build/h/hiercoll bench-gemm --gemm own \
		--shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 \
		> $L/seven-$1.txt 2>&1
	echo "seven rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$1.txt | cut -c1-200
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/seven-$1.txt | tr '\n' ' '; echo
}
fused row 1; fused tensor 2; fused block 3
seven 4
fused row 5; fused tensor 6; fused block 7
cd $OUT && tar czf logs.tgz logs && rm -rf logs
