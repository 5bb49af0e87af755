#!/usr/bin/env bash
# s40 run04 (nvidia-h200-x2): main's head (3ec7951, build h) on 2 GPUs: hiercoll bench zero copy at 1-8 MiB by device
# time (each measurement one CUDA-graph launch, NCCL's captured alike), three processes, beside plain calls once.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
bench() {  # bench TAG flags...
	local t=$1 t0=$SECONDS; shift
	timeout 100 build/h/hiercoll bench --sizes 1M,2M,4M,8M "$@" > $L/rs-$t.txt 2>&1
	echo "bench $t rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+ ' $L/rs-$t.txt | awk '{print $1, $4, $7, $10, $(NF-2), $NF}'
}
for i in 1 2 3; do bench cap-$i --graphs on --capture; done
bench plain-1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
