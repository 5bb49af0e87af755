#!/usr/bin/env bash
# s35 run04 (one H200): host time per call at main's head (m35, e94c115): the Go path's enqueue
# (`hiercoll bench --gpus 1 --host-cost --graphs off,on`), Python's layers on one rank (host_cost.py) and the
# driver's own calls (BenchmarkHostCall), each three times in turn.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_LIB=$PWD/build/m35/libhiercoll.so PYTHONPATH=$PWD/python HIERCOLL_CACHE_DIR=/tmp/c-m35
for i in 1 2 3; do
	t0=$SECONDS; timeout 60 build/m35/hiercoll bench --gpus 1 --host-cost --graphs off,on > $L/hostcost-go-$i.txt 2>&1; echo "go $i rc=$? $((SECONDS-t0))s"; grep "us per call" $L/hostcost-go-$i.txt
	t0=$SECONDS; timeout 90 python3 benchmarks/torch/host_cost.py > $L/hostcost-py-$i.txt 2>&1; echo "py $i rc=$? $((SECONDS-t0))s"; grep -iE "us|error" $L/hostcost-py-$i.txt | tail -16
	t0=$SECONDS; (cd device/cuda && timeout 60 ../../build/m35/device_cuda.test -test.run XXX -test.bench HostCall -test.benchtime 20000x > $L/hostcall-$i.txt 2>&1); echo "hostcall $i rc=$? $((SECONDS-t0))s"; grep -E "^Benchmark" $L/hostcall-$i.txt | head -12
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
