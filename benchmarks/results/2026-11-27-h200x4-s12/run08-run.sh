#!/usr/bin/env bash
# s12 run08 (4x H200): the final code (6dc74f6; later commits touch docs and results only): verify on
# 2x2 emulated nodes, the rs2d GPU tests, the Python tests on one rank and test_hiercoll.py on 4,
# torch graphs on 4.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/r8/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
s() { local name=$1 t=$2; shift 2; local t0=$SECONDS; timeout $t "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-160)"; }
s verify-2x2 60 build/r8/hiercoll verify --nodes 2 --calls 1 --repeat 50
s rs2d-gpu 90 build/r8/rs2d.test -test.count=1 -test.run TestGPU
s py-1 90 python3 -m pytest -q python/tests
s py-4 60 torchrun --nproc-per-node 4 -m pytest -q python/tests/test_hiercoll.py
s graphs-4 60 torchrun --nproc-per-node 4 python/tests/test_torch_graphs.py -v
cd $OUT && tar czf logs.tgz logs && rm -rf logs
