#!/usr/bin/env bash
# s37 run06 (one H200): where a GEMM tile's fixed cost goes, by taking the epilogue's work out (diagnostic variants:
# their products are wrong by design, so the A/B tool runs unchecked, HIERCOLL_GEMM_AB_UNCHECKED=1): ne (no scale
# multiply, no conversion, no staging stores: the consumers go from their last wgmma straight to the barriers; the
# storer stores whatever the staging buffer holds), twice. (A form keeping the stores with the bits of two floats
# XORed in place of the conversion made ptxas serialise the wgmmas under NVRTC 12.4: not run.)
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
scripts/kernel-check.sh build/ab/ne.cu --nvrtc > $L/kc-nvrtc-ne.txt 2>&1; echo "kc ne rc=$?"; tail -1 $L/kc-nvrtc-ne.txt
cd gemm
i=0
for v in ne ne; do
	i=$((i+1)); t0=$SECONDS
	[ $SECONDS -gt 330 ] && { echo "skip $v"; continue; }
	HIERCOLL_GEMM_AB_UNCHECKED=1 HIERCOLL_GEMM_AB=../build/ab/$v.cu timeout 150 ../build/ab/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-$v-$i.txt 2>&1
	echo "== $v rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|spills|FAIL|Error" $L/ab-$v-$i.txt | sed 's/^ *ab_test.go:[0-9]*: //' | cut -c1-150
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
