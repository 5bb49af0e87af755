#!/usr/bin/env bash
# s16 run03 (2 GPUs): zero copy at 1-8 MiB, enqueued and captured (graphs, NCCL's captured too), two rounds each
# in turn; Nsight Compute on the own fp8 GEMM per tensor and row-wise at 16384x4096x3584 (GPU 0).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s16n
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/$B/libhiercoll.so
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
b() { local name=$1; shift; local t0=$SECONDS
	timeout 90 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}' $L/$name.txt | cut -c1-150; }
S=1M,2M,4M,8M
b zc-1 --sizes $S
b cap-1 --sizes $S --graphs on --capture
b zc-2 --sizes $S
b cap-2 --sizes $S --graphs on --capture
for sc in tensor row; do
	t0=$SECONDS
	CUDA_VISIBLE_DEVICES=0 timeout 200 ncu --kernel-name regex:hc_gemm_e4m3 --launch-skip 2 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 16384x4096x3584 --rounds 3 --iters 2 > $L/ncu-$sc.txt 2>&1
	echo "ncu $sc rc=$? $((SECONDS-t0))s"; grep -E "Duration|Elapsed Cycles|Compute \(SM\)|Stall|Warp Cycles Per" $L/ncu-$sc.txt | head -12
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
