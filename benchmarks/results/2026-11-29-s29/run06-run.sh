#!/usr/bin/env bash
# s29 run06 (one H200): exp/pp-cluster's gemm.cu compiled with the machine's CUDA 13 nvcc for sm_90a, ptxas -v: does
# ptxas serialise the ping-pong kernels' wgmmas (C75xx notes), and the SASS counts of their wgmmas and waits.
set -uo pipefail
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvcc --version | tail -2 >> $L/when.txt
t0=$SECONDS
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/g.cubin -x cu build/r5/gemm-pp.cu > $L/nvcc-pp.txt 2>&1; echo "nvcc rc=$? $((SECONDS-t0))s"
grep -E "C75" $L/nvcc-pp.txt | sed 's/.*function //' | sort | uniq -c
for k in hc_gemm_e4m3_bf16_nk hc_gemm_e4m3_bf16_nk_pp hc_gemm_e4m3_bf16_nk_ppc hc_gemm_e4m3_bf16_nk_row hc_gemm_e4m3_bf16_nk_row_pp; do
	cuobjdump -sass -fun $k /tmp/g.cubin > $L/sass-$k.txt 2>&1
	echo "$k: QGMMA $(grep -c QGMMA $L/sass-$k.txt) DEPBAR $(grep -c 'WARPGROUP.DEPBAR' $L/sass-$k.txt) ARRIVE $(grep -c 'WARPGROUP.ARRIVE' $L/sass-$k.txt)"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
