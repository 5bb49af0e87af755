#!/usr/bin/env bash
# s23 run09 (one H200): host_cost.py with the Python package as changed (new: the current stream as a raw CUstream in gemm and the GEMM + RS calls) and as on main (old), new old new old; then the package's torch tests on one rank.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s23-run09.sh $L/run.sh
i=0
for v in new old new old; do i=$((i+1)); t0=$SECONDS
	py=python; [ $v = old ] && py=scratch-oldpy
	PYTHONPATH=$PWD/$py HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 100 python3 benchmarks/torch/host_cost.py > $L/hostcost-$v-$i.txt 2>&1
	echo "$v rc=$? $((SECONDS-t0))s"; grep -E "own GEMM|graphs=False|Error|error" $L/hostcost-$v-$i.txt | cut -c1-260; done
t0=$SECONDS; PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 200 python3 -m pytest -q python/tests > $L/py-1.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0))s"; tail -3 $L/py-1.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
