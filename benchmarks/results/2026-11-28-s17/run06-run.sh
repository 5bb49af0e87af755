#!/usr/bin/env bash
# s17 run05 (one H200): the fp8 consumers' halves in turn (s17t, with the row scales in shared memory) against
# the row scales in shared memory alone (s17r) and main (s17m): the GEMM's GPU tests of s17t (compile and load
# every kernel, every scaling against fp64), then gemm_fp8.py row-wise at four shapes t, r, m, m, r, t; per tensor
# t, m, m, t. The t runs are skipped if the tests fail.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
t0=$SECONDS; (cd gemm && timeout 150 ../build/s17t/gemm.test -test.run 'GPU' -test.v > $L/gemm-gpu-tests.txt 2>&1); trc=$?; echo "gemm GPU tests rc=$trc $((SECONDS-t0))s"; grep -E "^(---|ok|FAIL|PASS)|spill|bytes stack" $L/gemm-gpu-tests.txt | head -40
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
p() { local name=$1 b=$2 sc=$3 t0=$SECONDS
	if [ $b = s17t ] && [ $trc != 0 ]; then echo "$name skipped"; return; fi
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$name.txt 2>&1
	echo "$name $b $sc rc=$? $((SECONDS-t0))s"; }
p row-t-1 s17t row
p row-r-1 s17r row
p row-m-1 s17m row
p row-m-2 s17m row
p row-r-2 s17r row
p row-t-2 s17t row
p tensor-t-1 s17t tensor
p tensor-m-1 s17m tensor
p tensor-m-2 s17m tensor
p tensor-t-2 s17t tensor
for f in $L/row-*.txt $L/tensor-*.txt; do echo "== $(basename $f)"; grep -E '^ +[0-9]+x' $f | cut -c1-140,240-262; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
