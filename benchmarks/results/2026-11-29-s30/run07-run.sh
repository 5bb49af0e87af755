#!/usr/bin/env bash
# s30 run07 (one H200): two block-wise mainloops on top of main e84be44 (f): s7 reads the next k tile's scales (and
# waits for its stage) while this one's last quarter runs; s8 carries the last quarter across the loop's back edge
# (promoted once the next k tile's first quarter is issued). nvcc 13's ptxas -v of each; gemm_fp8.py --scaling block
# s7 s8 f f s8 s7 (those ptxas did not serialise); Nsight Compute of each; the GEMM GPU tests of the faster.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
ok="f"
for v in s7 s8; do t0=$SECONDS
	nvcc -gencode arch=compute_90a,code=sm_90a -cubin -std=c++17 -Xptxas -v -o /tmp/$v.cubin -x cu build/$v/gemm-q.cu > $L/nvcc-$v.txt 2>&1
	cuobjdump -sass -fun hc_gemm_e4m3_bf16_nk_block /tmp/$v.cubin > /tmp/sass-$v.txt 2>&1
	c75=$(grep -c C75 $L/nvcc-$v.txt)
	echo "$v nvcc $((SECONDS-t0))s: C75 $c75; QGMMA $(grep -c QGMMA /tmp/sass-$v.txt) DEPBAR $(grep -c WARPGROUP.DEPBAR /tmp/sass-$v.txt); spilling:"
	grep -B2 -E "[1-9][0-9]* bytes spill stores" $L/nvcc-$v.txt | grep -oE "hc_gemm\w+|[0-9]+ bytes spill stores" | paste - -
	[ "$c75" = 0 ] && ok="$ok $v"
done
echo "timed: $ok"
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in s7 s8 f f s8 s7; do i=$((i+1)); t0=$SECONDS
	case " $ok " in *" $b "*) ;; *) continue;; esac
	[ $(left) -lt 150 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes $S --rounds 3 --iters 10 > $L/block-$b-$i.txt 2>&1
	echo "block $b rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/block-$b-$i.txt | cut -c1-50,180-240; done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
for b in ${ok#f }; do [ $(left) -lt 130 ] && continue; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 50 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 3 --metrics $M --csv python3 benchmarks/torch/gemm_fp8.py --scaling block --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-$b-block.csv 2> $L/ncu-$b-block.err
	echo "ncu $b rc=$? $((SECONDS-t0))s"; grep -E "tensor" $L/ncu-$b-block.csv | sed 's/"//g' | awk -F, '{print $(NF-2), $NF}' | head -3; done
for b in ${ok#f }; do [ $(left) -lt 100 ] && continue; t0=$SECONDS
	(cd gemm && timeout 100 ../build/$b/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/$b-gemm-gpu-tests.txt 2>&1)
	echo "$b gemm GPU tests rc=$? $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL)|spills|panic" $L/$b-gemm-gpu-tests.txt | head -4; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
