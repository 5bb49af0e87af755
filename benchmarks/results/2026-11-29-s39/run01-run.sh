#!/usr/bin/env bash
# s39 run01 (one H200): what makes the clustered ping-pong (ppc) slow. Library build/pp39: branch exp/pp-d = the
# s38 exp/pp-u diff on main 6b84217 plus two diagnostic kernels: PP 3 (ppx: clusters of two, the pair's stages
# refilled once both have read them, no multicast) and PP 4 (ppl: pp launched in clusters of two, nothing shared).
# (1) gemm_fp8.py row-wise, PP 0..4 in turn, one process each, issue 29's four shapes; (2) TestGemmScalingsOnGPU
# under PP 3 and 4; (3) Nsight Compute (clocks free, one launch, warp states + source counters + L2) of PP 0,1,2,3
# row-wise at 8192x8192x7168.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run01.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/pp39/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp
S4=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
for v in 0 1 2 3 4; do t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes $S4 --rounds 3 --iters 10 --check-rows 16 > $L/row-pp$v.txt 2>&1
	echo "row pp$v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/row-pp$v.txt | awk '{print $1, $2, $8, $15}' | tr '\n' ' '; echo
	grep -m2 -iE "error|fail|exceed" $L/row-pp$v.txt | cut -c1-200
done
cd gemm
for v in 3 4; do t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 90 ../build/pp39/gemm.test -test.run 'TestGemmScalingsOnGPU' -test.v > $L/pp$v-gemm-gpu-tests.txt 2>&1
	echo "pp$v tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- FAIL|--- PASS: TestGemm|ok|FAIL|PASS)" $L/pp$v-gemm-gpu-tests.txt | head -4
done
cd ..
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for v in 2 3 1 0; do t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 150 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 $SEC -o /tmp/prof-pp$v \
		python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-pp$v.txt 2>&1
	echo "ncu pp$v rc=$? $((SECONDS-t0))s"
	ncu -i /tmp/prof-pp$v.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $L/sass-pp$v.csv.gz
	ncu -i /tmp/prof-pp$v.ncu-rep > $L/details-pp$v.txt 2>&1
	grep -E "^  hc_gemm|SM Frequency|Elapsed Cycles|Compute \(SM\)|L2 Cache Throughput|Issue Slots|Warp Cycles Per Issued|No Eligible" $L/details-pp$v.txt | head -10
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
