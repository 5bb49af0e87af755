#!/usr/bin/env bash
# s39 run02 (one H200): the clustered ping-pong without its end-of-kernel cluster barrier. Libraries: build/pp39
# (run01's: idle threads of the producer warpgroup wait at a cluster barrier until the kernel's end) and build/pp39t
# (exp/pp-d dc01a65: idle threads exit at once, the loader waits for the peer's last releases instead; PP 4 has no
# cluster barrier at all). gemm_fp8.py row-wise in turn, one process each; then the new PP 2's GEMM GPU tests;
# Nsight Compute of the new PP 2 and PP 4 (one launch, 8192x8192x7168).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run02.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
for x in "t 0" "t 1" "t 4" "o 4" "t 2" "o 2" "t 3" "t 1" "t 2"; do set -- $x; t0=$SECONDS
	lib=pp39; [ $1 = t ] && lib=pp39t
	HIERCOLL_LIB=$PWD/build/$lib/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-$lib HIERCOLL_GEMM_PP=$2 timeout 60 python3 benchmarks/torch/gemm_fp8.py \
		--scaling row --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/row-$1-pp$2-$SECONDS.txt 2>&1
	echo "row $1 pp$2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/row-$1-pp$2-*.txt | tail -4 | awk '{print $1, $2, $8, $15}' | tr '\n' ' '; echo
	grep -m2 -iE "error|fail|exceed" $L/row-$1-pp$2-*.txt | cut -c1-200
done
cd gemm; t0=$SECONDS
HIERCOLL_GEMM_PP=2 HIERCOLL_CACHE_DIR=/tmp/c-pp39t timeout 90 ../build/pp39t/gemm.test -test.run 'TestGemmScalingsOnGPU' -test.v > $L/t-pp2-gemm-gpu-tests.txt 2>&1
echo "t pp2 tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- FAIL|--- PASS: TestGemm|ok|FAIL|PASS)" $L/t-pp2-gemm-gpu-tests.txt | head -4
cd ..
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section MemoryWorkloadAnalysis"
for v in 2 4; do t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/pp39t/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp39t HIERCOLL_GEMM_PP=$v timeout 100 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 $SEC -o /tmp/prof-t$v \
		python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-t-pp$v.txt 2>&1
	echo "ncu t pp$v rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-t$v.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-t-pp$v.csv.gz
	ncu -i /tmp/prof-t$v.ncu-rep > $L/details-t-pp$v.txt 2>&1
	grep -E "^  hc_gemm|SM Frequency|Elapsed Cycles|Compute \(SM\)|L2 Cache Throughput|Issue Slots" $L/details-t-pp$v.txt | head -8
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
