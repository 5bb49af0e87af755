#!/usr/bin/env bash
# s43 run04 (one H200): Nsight Compute (clocks free, one launch each) of main's row-wise fp8 kernel and of mc3's (run03:
# clusters of two sharing B by TMA multicast) in the same A/B process, at 4096x8192x2048 and 8192x8192x7168: whether
# the consumers' waits for their stages' data (fortieth session: 9.0% / 5.5% of the warp samples) fall with the
# halved B loads. The A/B tool's launches of a case: 0 built-in, 1 variant (the check), then 2 built-in, 3 variant.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run04.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=3 HIERCOLL_GEMM_AB=../build/ab43/mc3.cu
SEC="--section LaunchStats --section WarpStateStats --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis"
cd gemm
prof() {  # prof SHAPE SKIP TAG
	local t0=$SECONDS tag=$3-$1
	HIERCOLL_GEMM_AB_CASES=row:$1 timeout 150 ncu --clock-control none --kernel-name hc_gemm_e4m3_bf16_nk_row --launch-skip $2 --launch-count 1 $SEC \
		-o /tmp/prof-$tag ../build/ab43/gemm.test -test.run TestGemmABOnGPU -test.v > $L/ncu-$tag.txt 2>&1
	echo "ncu $tag rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL" $L/ncu-$tag.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-160
	ncu -i /tmp/prof-$tag.ncu-rep > $L/details-$tag.txt 2>&1
	ncu -i /tmp/prof-$tag.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$tag.csv.gz
	grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|Cluster" $L/details-$tag.txt | head -8
}
prof 4096x8192x2048 2 main
prof 4096x8192x2048 3 mc3
prof 8192x8192x7168 2 main
prof 8192x8192x7168 3 mc3
cd $OUT && tar czf logs.tgz logs && rm -rf logs
