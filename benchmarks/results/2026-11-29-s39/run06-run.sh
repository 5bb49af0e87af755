#!/usr/bin/env bash
# s39 run06 (one H200): L2 traffic of the ping-pong kernel alone (PP 1) and launched in clusters of two (PP 4), main's
# kernel (PP 0) beside them: Nsight Compute memory tables and L2 sector counts (incl. the L2 fabric between the two
# partitions), one launch each, row-wise at 8192x8192x7168, library build/pp39t (exp/pp-d dc01a65).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s39-run06.sh $L/run.sh
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/pp39t/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-pp39t
MET=lts__t_sectors.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_requests_srcunit_tex.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum,dram__bytes_read.sum,sm__cycles_elapsed.max,lts__cycles_elapsed.max
for v in 1 4 0; do t0=$SECONDS
	HIERCOLL_GEMM_PP=$v timeout 100 ncu --clock-control none --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 \
		--section MemoryWorkloadAnalysis_Tables --metrics $MET \
		python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-l2-pp$v.txt 2>&1
	echo "ncu pp$v rc=$? $((SECONDS-t0))s"; grep -E "^  hc_gemm|lts__|dram__|sm__cycles" $L/ncu-l2-pp$v.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
