#!/usr/bin/env bash
# s35 run02 (one H200, no GPU work): the GPU machine's CUDA 13 ptxas on exp/split-tail's gemm.cu (st) and main's:
# ptxas -v (registers, spills, its C75xx notes on serialised wgmmas) and each kernel's SASS, to read here.
set -uo pipefail
L=$OUT/logs; mkdir -p $L
which nvcc cuobjdump > $L/tools.txt 2>&1; nvcc --version >> $L/tools.txt 2>&1
for x in st:build/st/gemm-st.cu m35:gemm/gemm.cu; do n=${x%%:*}; f=${x#*:}
	t0=$SECONDS; timeout 200 nvcc -arch=sm_90a -cubin -std=c++17 -lineinfo -Xptxas -v -o $L/$n.cubin $f > $L/ptxas-$n.txt 2>&1
	echo "$n rc=$? $((SECONDS-t0))s"; grep -c "C75" $L/ptxas-$n.txt; grep -B1 "spill" $L/ptxas-$n.txt | grep -v " 0 bytes spill stores" | grep -i "spill" | head
	cuobjdump -sass $L/$n.cubin | gzip > $L/$n.sass.gz; rm -f $L/$n.cubin; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
