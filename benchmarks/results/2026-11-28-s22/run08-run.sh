#!/usr/bin/env bash
# s22 run08 (2 H200s): bench-gemm --graphs on --capture (graph launches), --graphs on (replayable, enqueued), and the
# default (growing signals), --gemm own, at two of issue 30's shapes and two small ones where the host's enqueue shows.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((300 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run08.sh $L/run.sh
S=8192x8192x8192,4096x8192x8192,2048x4096x4096,1024x4096x4096
i=0
for x in "cap --graphs on --capture" "rep --graphs on" "grow" "cap --graphs on --capture"; do set -- $x; n=$1; shift; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $n"; continue; }
	timeout 80 build/gr/hiercoll bench-gemm --gemm own --shapes $S "$@" > $L/gemm-$n-$i.txt 2>&1
	echo "$n rc=$? $((SECONDS-t0))s"
	grep -E '^[0-9]+x[0-9]+x[0-9]+ +[0-9]' $L/gemm-$n-$i.txt | awk '{print $1, "gemm", $3, "rs", $5, "rsauto", $6, "g+nccl", $7, "g+rs", $8, "ovl", $9, "ovl/bound", $12, $NF}'
	grep -E "host enqueue|Error|error" $L/gemm-$n-$i.txt | head -4 | cut -c1-200; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
