#!/usr/bin/env bash
# s30 run04 (one H200): the block-wise scales loaded by a warp of the producer warpgroup with cp.async into three
# shared-memory slots, landing on the stage's full barrier (s4: main's halves mainloop; s5: the quarters of run01-03),
# against main b41f346 (m0): nvcc 13's ptxas -v, the GEMM GPU tests, gemm_fp8.py --scaling block s4 s5 m0 m0 s5 s4,
# Nsight Compute of the block kernels at 8192x8192x7168, the GEMM + RS check on 2 shared ranks with s4.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
for v in s4 s5; do t0=$SECONDS
	nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/$v.cubin -x cu build/$v/gemm-q.cu > $L/nvcc-$v.txt 2>&1
	echo "$v nvcc $((SECONDS-t0))s: C75 $(grep -c C75 $L/nvcc-$v.txt); spilling:"; grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-$v.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - - 
	t0=$SECONDS; (cd gemm && timeout 120 ../build/$v/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/$v-gemm-gpu-tests.txt 2>&1); rc=$?
	echo "$v gemm GPU tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic|Error" $L/$v-gemm-gpu-tests.txt | head -6
done
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in s4 s5 m0 m0 s5 s4; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 80 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-260; done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
for b in s4 s5; do [ $(left) -lt 70 ] && continue; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 50 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 3 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-$b-block.csv 2> $L/ncu-$b-block.err
	echo "ncu $b rc=$? $((SECONDS-t0))s"; grep -E "tensor|duration" $L/ncu-$b-block.csv | sed 's/"//g' | awk -F, '{print $(NF-2), $NF}' | head -6; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
if [ $(left) -gt 45 ]; then t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/s4/libhiercoll.so HIERCOLL_DEVICE=0 timeout 60 torchrun --nproc-per-node 2 benchmarks/torch/gemm_fp8.py \
		--shared-gpu --scaling block --shapes 2048x8192x8192,1000x2056x4224 --rounds 3 > $L/s4-rs-shared-block.txt 2>&1
	echo "s4-rs-shared-block rc=$? $((SECONDS-t0))s"; grep -hE "x[0-9]+ .*(ok|FAILED)|FAILED|Error" $L/s4-rs-shared-block.txt | head; fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
