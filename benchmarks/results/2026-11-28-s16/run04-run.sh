#!/usr/bin/env bash
# s16 run04 (2 GPUs): walk groups within segments (s16n, d22b071) against the build before (s16o) at 512 rows
# per destination on 2 GPUs (M = 1024), bench-gemm --gemm own in turn; Nsight Compute on the own fp8 GEMM per
# tensor and row-wise at 16384x4096x3584 (GPU 0, one launch each, the third).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/s16n/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
g() { local name=$1 b=$2; shift 2; local t0=$SECONDS
	timeout 240 build/$b/hiercoll bench-gemm --gemm own "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/$name.txt | cut -c1-200; grep -E 'traced' $L/$name.txt | cut -c20-200; }
S=1024x8192x28672,1024x8192x8192
g gemm-new-1 s16n --shapes $S
g gemm-old-1 s16o --shapes $S
g gemm-old-2 s16o --shapes $S
g gemm-new-2 s16n --shapes $S
for sc in tensor row; do
	t0=$SECONDS
	CUDA_VISIBLE_DEVICES=0 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
		timeout 200 ncu --kernel-name regex:hc_gemm_e4m3 --launch-skip 2 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 16384x4096x3584 --rounds 3 --iters 2 > $L/ncu-$sc.txt 2>&1
	echo "ncu $sc rc=$? $((SECONDS-t0))s"; grep -E "Duration|Elapsed Cycles|Compute \(SM\)|Warp Cycles Per" $L/ncu-$sc.txt | head -8
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
