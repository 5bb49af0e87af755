#!/usr/bin/env bash
# s31 run09 (one H200): where the block-wise kernel's time goes beyond its mainloop's ceiling: ns (main with no scale
# reads in the mainloop and no scale loader: results wrong, timing only) against main m1, gemm_fp8.py --scaling block
# ns m1 m1 ns, and --scaling tensor with m1 (the per-tensor kernel, same tiles); Nsight Compute (clocks free) of m1's
# block-wise and per-tensor kernels at 8192x8192x7168: speed of light and the memory tables.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((330 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
i=0
for b in ns:block m1:block m1:tensor m1:block ns:block m1:tensor; do i=$((i+1)); t0=$SECONDS; v=${b%%:*}; sc=${b##*:}
	[ $(left) -lt 60 ] && { echo "skip $b"; continue; }
	HIERCOLL_LIB=$PWD/build/$v/libhiercoll.so timeout 50 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$sc-$v-$i.txt 2>&1
	echo "$sc $v rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$sc-$v-$i.txt | cut -c1-50,180-240; done
for sc in block tensor; do [ $(left) -lt 40 ] && continue; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/m1/libhiercoll.so timeout 60 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3" \
		--launch-skip 4 --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --csv \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 8192x8192x7168 --rounds 3 --iters 2 > $L/ncu-m1-$sc.csv 2> $L/ncu-m1-$sc.err
	echo "ncu $sc rc=$? $((SECONDS-t0))s $(wc -l < $L/ncu-m1-$sc.csv) lines"; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
