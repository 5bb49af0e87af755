#!/usr/bin/env bash
# s13 run06 (2x H200, nvidia-h200-x2): 4646e11 (the session's final code) — verify (auto; the pull engine
# registered with the copy engine pulling every block, graph-replayable signals), the rs2d GPU tests, test_hiercoll.py and test_torch_graphs.py on 2 ranks.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s13d
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
s() { local name=$1 t=$2; shift 2; local t0=$SECONDS; timeout $t "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s: $(tail -n 1 $L/$name.txt | cut -c1-160)"; }
s verify-auto 90 $B/hiercoll verify --repeat 100
s verify-ce 90 $B/hiercoll verify --engine pull --register --ce-pull 1K --repeat 30 --graphs on
s rs2d-gpu 120 $B/rs2d.test -test.count=1 -test.run TestGPU
s py-2 120 torchrun --nproc-per-node 2 -m pytest -q python/tests/test_hiercoll.py
s graphs-2 90 torchrun --nproc-per-node 2 python/tests/test_torch_graphs.py -v
cd $OUT && tar czf logs.tgz logs && rm -rf logs
