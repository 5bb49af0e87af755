#!/usr/bin/env bash
# s27 run03 (nvidia-h200-x4): exp/sum4-rule at a6e36b3 (build r: run02's kernel, two segments on 4 ranks only from
# SumMinRows rows, merged with main) beside main 117ef2a (build m). bench-gemm at issue 30's seven shapes on 4 GPUs,
# r m r m r m; then fp8 e4m3 row-wise and block-wise at the three default shapes, r and m in turn (the sum of fp8
# kernels on 4 ranks, checked against NCCL).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s27-run03.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
pr() { grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $1 | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $1 | grep -vc " ok "; }
i=0
for x in r m r m r m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
	timeout 100 build/$x/hiercoll bench-gemm --gemm own --shapes $S > $L/g4-$x-$i.txt 2>&1
	echo "g4 $x $i rc=$? $((SECONDS-t0))s"; pr $L/g4-$x-$i.txt
done
for sc in row block; do for x in r m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 50 ] && { echo "skip $sc $x"; continue; }
	timeout 90 build/$x/hiercoll bench-gemm --gemm own --input e4m3 --scaling $sc > $L/f8-$sc-$x-$i.txt 2>&1
	echo "f8 $sc $x $i rc=$? $((SECONDS-t0))s"; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $L/f8-$sc-$x-$i.txt | cut -c1-60,150-; pr $L/f8-$sc-$x-$i.txt
done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
