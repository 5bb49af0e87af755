#!/usr/bin/env bash
# s16 run09 (2 GPUs): the C ABI's small products through the overlap context's second context (ef3fff8, s16f)
# from Python: the Python tests on 1 and 2 ranks, the graph tests on 2; gemm_baseline.py --hiercoll at small
# products, the new library against 424a063's (s16o, its own Python package), in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
t() { local name=$1; shift; local t0=$SECONDS
	PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/s16f/libhiercoll.so timeout 240 "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -3 $L/$name.txt; }
t py-1 python3 -m pytest -q python/tests
t py-2 torchrun --nproc-per-node 2 -m pytest -q python/tests/test_hiercoll.py
t graphs-2 torchrun --nproc-per-node 2 python/tests/test_torch_graphs.py -v
S=256x8192x8192,1024x4096x4096,2048x4096x4096,1024x8192x8192,4096x8192x2048,2048x8192x8192
p() { local name=$1 b=$2 py=$3; local t0=$SECONDS
	PYTHONPATH=$PWD/$py HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 240 torchrun --nproc-per-node 2 \
		benchmarks/torch/gemm_baseline.py --hiercoll --shapes $S > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E "^ +[0-9]+x" $L/$name.txt | cut -c1-160; }
p small-new-1 s16f python
p small-old-1 s16o build/s16o/python
p small-old-2 s16o build/s16o/python
p small-new-2 s16f python
cd $OUT && tar czf logs.tgz logs && rm -rf logs
