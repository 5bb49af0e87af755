#!/usr/bin/env bash
# s35 run03 (one H200): scripts/kernel-check.sh --nvcc (the GPU machine's CUDA 13 ptxas) on main's gemm.cu and on
# exp/split-tail's (st, which ptxas 13 serialises: C7518); then bench-mm bf16 at main's head (m35: e94c115's device
# code) twice more, for three processes with run01's.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; timeout 120 scripts/kernel-check.sh --nvcc --sass $L/sass-m35 > $L/kernel-check-m35.txt 2>&1; echo "kernel-check m35 rc=$? $((SECONDS-t0))s"; tail -3 $L/kernel-check-m35.txt
t0=$SECONDS; timeout 120 scripts/kernel-check.sh build/st/gemm-st.cu --nvcc > $L/kernel-check-st.txt 2>&1; echo "kernel-check st rc=$? $((SECONDS-t0))s"; tail -3 $L/kernel-check-st.txt | cut -c1-200
(cd $L && tar czf sass-m35.tgz sass-m35 && rm -rf sass-m35)
for i in 2 3; do t0=$SECONDS
	HIERCOLL_CACHE_DIR=/tmp/c-m35 timeout 100 build/m35/hiercoll bench-mm --layouts nk,kn > $L/mm-m35-$i.txt 2>&1; echo "bench-mm m35 $i rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/mm-m35-$i.txt | cut -c1-20,120-150; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
