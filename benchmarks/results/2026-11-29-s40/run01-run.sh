#!/usr/bin/env bash
# Pending (thirty-seventh session): main's library from PyTorch on every GPU of the machine, meant for
# nvidia-h200-x2 (the 2-GPU figures from PyTorch were last taken at b54737d / 2370a4f, before f56890c changed the C
# ABI's GEMM + RS path) and useful on any count: check_rs.py (zero copy, registered and the caller's own tensor beside
# dist.reduce_scatter_tensor), the Python tests (one process, then test_hiercoll.py on every rank), graph replays
# from Go and from torch, and gemm_baseline.py --hiercoll twice (bf16 GEMM + RS beside torch's mm then NCCL and
# async-TP). On one GPU it checks the script and the package with one rank.
#
# Build here into the ignored build/ (carry build/h, build/rs2d.test):
#   CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -buildmode=c-shared -o build/h/libhiercoll.so ./capi
#   go test -c -trimpath -ldflags='-s -w' -o build/rs2d.test ./rs2d
# Run from the repository root: bash benchmarks/results/pending/torch-set.sh
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
ngpu=$(nvidia-smi -L | wc -l)
export HIERCOLL_LIB=$PWD/build/h/libhiercoll.so PYTHONPATH=$PWD/python
run() {  # run TAG LIMIT cmd...: skipped when less than half its limit is left
	local t=$1 lim=$2 t0=$SECONDS; shift 2
	[ $(left) -lt $((lim / 2)) ] && { echo "skip $t"; return; }
	timeout $lim "$@" > $L/$t.txt 2>&1
	echo "$t rc=$? $((SECONDS-t0))s"; tail -n 4 $L/$t.txt | cut -c1-220
}
run check-rs 120 torchrun --nproc-per-node $ngpu benchmarks/torch/check_rs.py
run gemm-baseline-1 90 torchrun --nproc-per-node $ngpu benchmarks/torch/gemm_baseline.py --hiercoll
run pytest-1 120 python3 -m pytest -q python/tests
run pytest-ranks 120 torchrun --nproc-per-node $ngpu -m pytest -q python/tests/test_hiercoll.py
run graphs-go 90 build/rs2d.test -test.count=1 -test.run TestGPUGraphReplays -test.v
run graphs-torch 120 torchrun --nproc-per-node $ngpu python/tests/test_torch_graphs.py -v
run gemm-baseline-2 90 torchrun --nproc-per-node $ngpu benchmarks/torch/gemm_baseline.py --hiercoll
cd $OUT && tar czf logs.tgz logs && rm -rf logs
