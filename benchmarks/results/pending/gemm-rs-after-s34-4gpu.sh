#!/usr/bin/env bash
# Pending (thirty-fourth session): GEMM + RS on 4 GPUs after the own GEMM's device code changed on one H200 only
# (`75c94cc`: the stream-K gather's wait, every dtype; `bb5ee2b`: the block-wise promotions' order). Needs
# nvidia-h200-x4 (or nvidia-h100-x4). Measures main's head beside `2e51565` (the thirty-fourth session's start) in turn:
# fused fp8 GEMM + RS with each scaling on 4 ranks (issue 29's 1.25x / 1.15x goals; last measured at `b54737d`) and
# bench-gemm's own-GEMM GEMM + RS at issue 30's seven shapes (bf16), so that nothing there regressed.
#
# Build here, from worktrees of the two commits, into the ignored build/ (carry both folders):
#   CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -buildmode=c-shared -o build/<x>/libhiercoll.so ./capi
#   go build -trimpath -ldflags='-s -w' -o build/<x>/hiercoll ./cmd/hiercoll
# with <x> = head and s33 (2e51565). Run from the repository root: bash benchmarks/results/pending/gemm-rs-after-s34-4gpu.sh
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python
fused() {  # fused BUILD SCALING TAG: gemm_fp8.py on 4 ranks (its default GEMM + RS shapes)
	local t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip fused $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/$1/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$1 timeout 90 torchrun --nproc-per-node 4 \
		benchmarks/torch/gemm_fp8.py --scaling $2 --rounds 3 --iters 10 > $L/rs4-$2-$1-$3.txt 2>&1
	echo "fused $1 $2 rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/rs4-$2-$1-$3.txt | cut -c1-250
}
seven() {  # seven BUILD TAG: bench-gemm, own GEMM, issue 30's seven shapes
	local t0=$SECONDS
	[ $(left) -lt 90 ] && { echo "skip seven $1"; return; }
	HIERCOLL_CACHE_DIR=/tmp/c-$1 timeout 90 build/$1/hiercoll bench-gemm --gemm own \
		--shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672 \
		> $L/seven-$1-$2.txt 2>&1
	echo "seven $1 rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$1-$2.txt | cut -c1-200
}
i=0
for sc in block row tensor; do
	for b in head s33 s33 head; do i=$((i+1)); fused $b $sc $i; done
done
for b in head s33 head s33; do i=$((i+1)); seven $b $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
