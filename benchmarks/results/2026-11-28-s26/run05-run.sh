#!/usr/bin/env bash
# s26 run05 (nvidia-h200-x4): is the summed GEMM's loss on 4 GPUs its storers' polls? Build ss = sen (exp/sum4-each
# + summed-nowait) with the storer's wait for a block's rows sleeping 256 ns between polls (branch exp/sum4-sleep).
# ss's GEMM sum tests, then ss sen m ss sen m at issue 30's seven shapes.
set -uo pipefail
source scripts/gpu-env.sh
tar xJf build/pk5.txz -C build
L=$OUT/logs; mkdir -p $L; cp .s26-run05.sh $L/run.sh
left() { echo $((580 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 100 ../build/ss/gemm.test -test.run 'TestGemmSumOnGPU' -test.v > $L/ss-gemm-gpu-tests.txt 2>&1); rc=$?
echo "ss gemm sum tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/ss-gemm-gpu-tests.txt | head -5
[ $rc -eq 0 ] || { cd $OUT && tar czf logs.tgz logs; exit 1; }
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in ss sen m ss sen m; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $b $i"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/bf16-$b-$i.txt 2>&1
	echo "$b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/bf16-$b-$i.txt | awk '{printf "%s %s | ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/bf16-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo
	grep -E "^[0-9]+x|traced" $L/bf16-$b-$i.txt | sed 's/  */ /g' | grep -A1 "^8192x8192x8192 " | tail -1 | cut -c1-200; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
