#!/usr/bin/env bash
# s44 run06 (one H200): Nsight Compute (clocks free) of main's row-wise fp8 kernel and of pfw10's (run05: L2
# prefetches from warp 3) in one A/B process at 4096x8192x2048 (launches 2 and 3: built-in, variant): what the
# prefetches cost in DRAM and L2 traffic.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s44-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=3 HIERCOLL_GEMM_AB=../build/x/pfw10.cu HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048
cd gemm
t0=$SECONDS
timeout 200 ncu --clock-control none --kernel-name hc_gemm_e4m3_bf16_nk_row --launch-skip 2 --launch-count 2 \
	--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
	--metrics dram__bytes_read.sum,lts__t_sectors.sum,lts__t_requests.sum,lts__t_sectors_srcunit_tex.sum \
	-o /tmp/prof ../build/x/gemm.test -test.run TestGemmABOnGPU -test.v > $L/ncu.txt 2>&1
echo "ncu rc=$? $((SECONDS-t0))s"
ncu -i /tmp/prof.ncu-rep > $L/details.txt 2>&1
grep -E "hc_gemm|Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L2 Hit|dram__bytes_read.sum|lts__t_sectors.sum|lts__t_requests.sum|lts__t_sectors_srcunit_tex" $L/details.txt | head -40
