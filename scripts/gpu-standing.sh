#!/usr/bin/env bash
# The standing figures and the GPU check at one commit, on a machine of 4
# GPUs, or of 2, where the steps on every GPU are the 2-GPU set and the
# separate 2-GPU steps are skipped (after scripts/gpu-build.sh and
# scripts/build-capi.sh here; an older build for before/after in
# build/old-hiercoll, optional). Logs under $OUT.
#   scripts/gpu-standing.sh [sections...]   sections: rs rounds checks gemm fp8
#   rs:     the README's table: the reduce-scatter beside NCCL on every GPU
#           (zero copy twice, in turn with the caller's buffer plain,
#           registered and captured in a CUDA graph) and on 2 (zero copy
#           twice, registered, plain), from PyTorch on every GPU and on 2;
#           the older build's default engine in turn
#   rounds: under --max-symm 64M the pull engine in rounds and the ring,
#           beside the direct pull engine
#   checks: verify (the pull engine whole and in rounds, on emulated nodes
#           too, and on registered inputs by the copy engine), the GPU tests (dying rank, graph replays), the torch tests
#   gemm:   GEMM + RS against its bound at issue 30's seven shapes
#           (bench-gemm), the older build's in turn, and beside torch
#           (gemm_baseline.py) in three processes: async-TP's time moves
#           between processes (benchmarks/RESULTS.md)
#   fp8:    scripts/gpu-fp8.sh, when present
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
H=build/hiercoll
OLD=build/old-hiercoll
sections=${*:-rs checks gemm}
has() { [[ " $sections " == *" $1 "* ]]; }
ngpu=$(nvidia-smi -L | wc -l)
# step2 runs a step on GPUs 0 and 1 where there are more than 2 (on 2 the
# step on every GPU measured it already).
step2() {
	if [ "$ngpu" -gt 2 ]; then
		local name=$1; shift
		step "$name" env CUDA_VISIBLE_DEVICES=0,1 "$@"
	fi
}
{ date -u +"run at %Y-%m-%dT%H:%M:%SZ"; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; } >>"$OUT/when.txt" 2>&1
export HIERCOLL_LIB=$PWD/build/libhiercoll.so PYTHONPATH=$PWD/python
if has rs; then
	sizes=1M,4M,8M,16M,32M,64M,128M,512M,1G,2G
	step bench-zc-1 $H bench --sizes $sizes --csv "$OUT/bench-1x$ngpu.csv" --png "$OUT/bench-1x$ngpu.png"
	step bench-plain $H bench --sizes $sizes --copy-in
	step bench-registered $H bench --sizes $sizes --register
	step bench-captured $H bench --sizes 1M,4M,8M,32M,512M,2G --graphs on --capture
	step bench-zc-2 $H bench --sizes $sizes
	step2 bench-2gpu-zc-1 $H bench --sizes $sizes --csv "$OUT/bench-1x2.csv"
	step2 bench-2gpu-registered $H bench --sizes $sizes --register
	step2 bench-2gpu-plain $H bench --sizes $sizes --copy-in
	step2 bench-2gpu-zc-2 $H bench --sizes $sizes
	# Inputs of M × 4096 bf16 per rank: 32 MiB (M = 4096) to 2 GiB (M = 262144).
	rows2=4096x4096,16384x4096,65536x4096,131072x4096,262144x4096
	rows=4096x4096,16384x4096,32768x4096,65536x4096,262144x4096
	[ "$ngpu" -eq 2 ] && rows=$rows2
	step check-rs torchrun --nproc-per-node "$ngpu" benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
		--shapes $rows
	step2 check-rs-2gpu torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 \
		--shapes $rows2
	if [ -x "$OLD" ]; then
		step bench-old $OLD bench --sizes 32M,128M,512M,2G
		step bench-new $H bench --sizes 32M,128M,512M,2G
	fi
fi
if has rounds; then
	step rounds $H bench --sizes 128M,512M,2G --engine pull,ring --max-symm 64M --csv "$OUT/rounds-1x$ngpu.csv"
	step rounds-direct $H bench --sizes 128M,512M,2G --engine pull --csv "$OUT/rounds-direct-1x$ngpu.csv"
fi
if has checks; then
	step verify $H verify --repeat 200
	step verify-pull $H verify --engine pull --repeat 100
	step verify-pull-rounds $H verify --engine pull --max-symm 64M --repeat 50
	# Registered inputs, the copy engine's pulls forced from 1 MiB blocks (the
	# default on 2 GPUs from 256 MiB): on every GPU, and on 2.
	step verify-cepull $H verify --engine pull --register --ce-pull 1M --one-shot off --repeat 50
	step2 verify-cepull-2gpu $H verify --engine pull --register --ce-pull 1M --one-shot off --repeat 50
	if [ "$ngpu" -ge 4 ]; then
		step verify-pull-2x2 $H verify --engine pull --nodes 2 --max-symm 16M --repeat 50
		step verify-pull-4x1 $H verify --engine pull --nodes 4 --repeat 50
	fi
	step rs2d-gpu build/rs2d.test -test.count=1 -test.v -test.run 'TestGPU'
	step check-rs-pull torchrun --nproc-per-node "$ngpu" benchmarks/torch/check_rs.py --engine pull --dtypes bf16,int32 --shapes 4096x4096,8192x8192,16384x16384
	step pytest python3 -m pytest -q python/tests --ignore=python/tests/test_torch_graphs.py
	step torch-graphs torchrun --nproc-per-node "$ngpu" python/tests/test_torch_graphs.py
	step pytest-ranks torchrun --nproc-per-node "$ngpu" -m pytest -q python/tests/test_hiercoll.py
fi
if has gemm; then
	seven=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
	step gemm-new $H bench-gemm --gemm own --shapes $seven
	[ -x "$OLD" ] && step gemm-old $OLD bench-gemm --gemm own --shapes $seven
	for i in 1 2 3; do
		step gemm-torch-$i torchrun --nproc-per-node "$ngpu" benchmarks/torch/gemm_baseline.py --hiercoll
	done
fi
if has fp8 && [ -x scripts/gpu-fp8.sh ]; then
	step fp8 scripts/gpu-fp8.sh
fi
exit $status
