#!/usr/bin/env bash
# s30 run01 (one H200): the block-wise fp8 GEMM with 64-column quarters in two temporaries (build q, branch
# exp/block-quarters) against main b41f346 (m0): nvcc 13's ptxas notes and SASS counts of q's block kernel; q's GEMM
# GPU tests; gemm_fp8.py --scaling block q m0 m0 q; the GEMM + RS check on 2 ranks sharing the GPU with q; Nsight
# Compute (clocks free) of q's block kernel at 8192x8192x7168.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvcc --version | tail -2 >> $L/when.txt
t0=$SECONDS
nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/g.cubin -x cu build/q/gemm-q.cu > $L/nvcc-q.txt 2>&1; echo "nvcc rc=$? $((SECONDS-t0))s"
grep -E "C75" $L/nvcc-q.txt | sed 's/.*function //' | sort | uniq -c
for k in hc_gemm_e4m3_bf16_nk hc_gemm_e4m3_bf16_nk_block; do
	cuobjdump -sass -fun $k /tmp/g.cubin > $L/sass-$k.txt 2>&1
	echo "$k: QGMMA $(grep -c QGMMA $L/sass-$k.txt) DEPBAR $(grep -c 'WARPGROUP.DEPBAR' $L/sass-$k.txt) ARRIVE $(grep -c 'WARPGROUP.ARRIVE' $L/sass-$k.txt)"
done
t0=$SECONDS; (cd gemm && timeout 200 ../build/q/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/q-gemm-gpu-tests.txt 2>&1); rc=$?
echo "q gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|spill|panic|local|error" $L/q-gemm-gpu-tests.txt | head -30
if [ $rc -eq 0 ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
	i=0
	for x in "block q" "block m0" "block m0" "block q"; do set -- $x; i=$((i+1)); t0=$SECONDS
		[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 100 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$i.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-$i.txt | cut -c1-50,180-260; done
	M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed
	if [ $(left) -gt 90 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/q/libhiercoll.so timeout 80 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 4 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-q-block.csv 2> $L/ncu-q-block.err
	echo "ncu rc=$? $((SECONDS-t0))s"; fi
	unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
	if [ $(left) -gt 60 ]; then t0=$SECONDS
		HIERCOLL_LIB=$PWD/build/q/libhiercoll.so HIERCOLL_DEVICE=0 timeout 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
			--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/q-rs-shared-block.txt 2>&1
		echo "q-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/q-rs-shared-block.txt | head; fi
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
