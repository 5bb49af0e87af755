#!/usr/bin/env bash
# s40 run08 (one H200): branch exp/bk64 (build bk: 64-byte k tiles, eight stages of 24 KiB, A's and B's K-major
# boxes in the 64-byte swizzle; main has 128-byte k tiles in four stages of 48 KiB) beside main 3ec7951 (build h).
# First bk's GEMM GPU tests, per tensor and row-wise (block-wise is not adapted on the branch), then gemm_fp8.py
# row-wise and per tensor at issue 29's four shapes, builds in turn, three rounds.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run08.sh $L/run.sh
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && HIERCOLL_CACHE_DIR=/tmp/c-bk timeout 200 ../build/bk/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU/(tensor|row)/' -test.v > $L/bk-gemm-gpu-tests.txt 2>&1); rc=$?
echo "bk tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- FAIL|ok|FAIL|PASS)" $L/bk-gemm-gpu-tests.txt | head; grep -c -- "--- PASS" $L/bk-gemm-gpu-tests.txt
[ $rc -ne 0 ] && { grep -E "Error|error|expected|actual" $L/bk-gemm-gpu-tests.txt | head -20; cd $OUT && tar czf logs.tgz logs && rm -rf logs; exit 0; }
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
one() {  # one BUILD SCALING
	i=$((i+1))
	[ $(left) -lt 30 ] && { echo "skip $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/$1/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$1 timeout 70 python3 benchmarks/torch/gemm_fp8.py \
		--scaling $2 --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/$2-$1-$i.txt 2>&1
	echo "$2 $1 $i rc=$?"; grep -E '^ +[0-9]+x' $L/$2-$1-$i.txt | awk '{c=($0 ~ / ok: /)?"ok":"CHECK?"; print "  ", $1, $2, $6, $10, $15, c}'
}
for order in "bk h" "h bk" "bk h"; do
	for b in $order; do one $b row; done
	for b in $order; do one $b tensor; done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
