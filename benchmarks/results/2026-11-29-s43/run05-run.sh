#!/usr/bin/env bash
# s43 run05 (one H200): where in an item the consumers wait for their stages. wq (diagnostic, C bit for bit): main with
# the consumers' full-barrier wait written in three places (an item's first k tile; its next three, whose stages the
# loader fills during the last epilogue; the rest), so that Nsight Compute's warp samples, by instruction, say which k
# tiles wait. One launch (the A/B tool's launch 3: the variant after the check) at 4096x8192x2048 and 8192x8192x7168.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run05.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=3 HIERCOLL_GEMM_AB=../build/ab43/wq.cu
SEC="--section LaunchStats --section WarpStateStats --section SourceCounters --section SpeedOfLight"
cd gemm
prof() {  # prof SHAPE SKIP TAG
	local t0=$SECONDS tag=$3-$1
	HIERCOLL_GEMM_AB_CASES=row:$1 timeout 150 ncu --clock-control none --kernel-name hc_gemm_e4m3_bf16_nk_row --launch-skip $2 --launch-count 1 $SEC \
		-o /tmp/prof-$tag ../build/ab43/gemm.test -test.run TestGemmABOnGPU -test.v > $L/ncu-$tag.txt 2>&1
	echo "ncu $tag rc=$? $((SECONDS-t0))s"; grep -E "FAIL|differ" $L/ncu-$tag.txt | head -3
	ncu -i /tmp/prof-$tag.ncu-rep > $L/details-$tag.txt 2>&1
	ncu -i /tmp/prof-$tag.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-$tag.csv.gz
	grep -E "Duration|SM Frequency" $L/details-$tag.txt | head -2
}
prof 4096x8192x2048 3 wq
prof 8192x8192x7168 3 wq
cd $OUT && tar czf logs.tgz logs && rm -rf logs
