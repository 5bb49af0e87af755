#!/usr/bin/env bash
# s22 run10 (2 H200s): after the reread's refactor (e567a26): bench-gemm --graphs on --capture and bench --graphs on --capture, small.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s22-run10.sh $L/run.sh
timeout 100 build/m/hiercoll bench-gemm --gemm own --graphs on --capture --shapes 4096x8192x8192,2048x4096x4096 > $L/gemm-cap.txt 2>&1; echo "gemm rc=$?"
grep -E "captured:|^[0-9]+x[0-9]+x[0-9]+ +[0-9]" $L/gemm-cap.txt | cut -c1-220
timeout 60 build/m/hiercoll bench --graphs on --capture --sizes 32M,512M > $L/bench-cap.txt 2>&1; echo "bench rc=$?"
grep -E "captured|^ +[0-9]+ " $L/bench-cap.txt | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
