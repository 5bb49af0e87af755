#!/usr/bin/env bash
# s25 run05 (2 H200s): main at e753a3a (e: the storer's sums queued): bench-gemm captured and replayable, fp8 row-wise
# and block-wise GEMM + RS checks, the Python package's tests, then the torch scripts on 2 ranks (gemm_baseline.py
# --hiercoll twice, gemm_fp8.py row-wise).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((470 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cp scripts/.s25-run05.sh $L/run.sh
export HIERCOLL_LIB=$PWD/build/e/libhiercoll.so PYTHONPATH=$PWD/python
sh() { grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $1 | awk '{printf "%s overlap %s ovl/bound %s | ", $1, $9, $12}'; grep -oE "(ok|FAIL)[^|]*(summed in the GEMM)?" $1 | tr '\n' ' '; grep -iE "rror" $1 | head -2; echo; }
for x in "capture --graphs on --capture" "replay --graphs on" ; do set -- $x; t0=$SECONDS; n=$1; shift
	timeout 90 build/e/hiercoll bench-gemm --gemm own "$@" --reps 3 --shapes 2048x4096x4096,4096x8192x8192 > $L/e-gemm-$n.txt 2>&1; echo "e $n rc=$? $((SECONDS-t0))s"; sh $L/e-gemm-$n.txt; done
for sc in row block; do t0=$SECONDS
	timeout 90 build/e/hiercoll bench-gemm --gemm own --input e4m3 --scaling $sc --reps 3 --shapes 4096x8192x8192,2048x8192x28672 > $L/e-fp8-$sc.txt 2>&1; echo "e fp8 $sc rc=$? $((SECONDS-t0))s"; sh $L/e-fp8-$sc.txt; done
t0=$SECONDS; timeout 120 python3 -m pytest -q python/tests > $L/e-py.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0))s"; tail -2 $L/e-py.txt
run() { local name=$1 lim=$2; shift 2; [ $(left) -lt $((lim / 2)) ] && { echo "skip $name: $(left)s left"; return; }
	local t0=$SECONDS; timeout $lim "$@" > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
for i in 1 2; do run torch-$i 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_baseline.py --hiercoll; grep -E '^ +[0-9]+x|spread' $L/torch-$i.txt | cut -c1-220; done
run fp8-row 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672
tail -4 $L/fp8-row.txt | cut -c1-300
cd $OUT && tar czf logs.tgz logs && rm -rf logs
