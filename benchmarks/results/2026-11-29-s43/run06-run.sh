#!/usr/bin/env bash
# s43 run06 (one H200): er, the previous k tile's stage released early where a k tile's data is late. run05 found
# the consumers' stage waits in the steady state (an item's fifth k tile on), and main releases k tile k-1's stage
# only after k tile k's wgmmas are issued, so a late stage also delays the release of the one before it (and with it
# the loader's next fill). In er a consumer warp tests the full barrier first (mbarrier.test_wait); if the data is not
# there it waits for its wgmmas (wait_group 0) and releases k-1's stage before waiting. C bit for bit (the A/B tool
# checks it). Three processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s43-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export HIERCOLL_CACHE_DIR=/tmp/c-ab HIERCOLL_GEMM_AB_ROUNDS=9
export HIERCOLL_GEMM_AB_CASES=row:4096x8192x2048,tensor:4096x8192x2048,row:16384x4096x3584,tensor:16384x4096x3584,row:8192x8192x7168,tensor:8192x8192x7168,row:8192x8192x14336,bf16:4096x8192x2048
cd gemm
for i in 1 2 3; do t0=$SECONDS
	HIERCOLL_GEMM_AB=../build/ab43/er.cu timeout 200 ../build/ab43/gemm.test -test.run 'TestGemmABOnGPU' -test.v > $L/ab-er-$i.txt 2>&1
	echo "er rc=$? $((SECONDS-t0))s"; grep -E "built-in/variant|FAIL|differ|spill|panic|rror" $L/ab-er-$i.txt | sed 's/.*ab_test.go:[0-9]*: //' | cut -c1-170
done
