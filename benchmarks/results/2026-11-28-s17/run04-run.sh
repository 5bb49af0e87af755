#!/usr/bin/env bash
# s17 run04 (one H200): Nsight Compute source counters on the own fp8 GEMM at 4096x8192x2048, row-wise with the
# scales in shared memory (s17r) and per tensor (s17r, s17m), one launch each; gemm_fp8.py row-wise r, m, m, r.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
p() { local name=$1 b=$2 sc=$3 t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 150 python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $S --rounds 3 --iters 10 > $L/$name.txt 2>&1
	echo "$name $b $sc rc=$? $((SECONDS-t0))s"; }
p row-r-3 s17r row
p row-m-3 s17m row
p row-m-4 s17m row
p row-r-4 s17r row
for f in $L/row-*.txt; do echo "== $(basename $f)"; grep -E '^ +[0-9]+x' $f | cut -c1-140; done
for v in r-row:s17r:row r-tensor:s17r:tensor; do IFS=: read name b sc <<< "$v"; t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 200 ncu --kernel-name regex:hc_gemm_e4m3 --launch-skip 1 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
		-o $L/prof-$name python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes 4096x8192x2048 --rounds 3 --iters 2 > $L/ncu-$name.txt 2>&1
	echo "ncu $name rc=$? $((SECONDS-t0))s"
	ncu -i $L/prof-$name.ncu-rep --page source --print-source sass --csv > $L/sass-$name.csv 2>&1
	ncu -i $L/prof-$name.ncu-rep > $L/details-$name.txt 2>&1
	grep -E "Elapsed Cycles|SM Active|Compute \(SM\)" $L/details-$name.txt
	rm $L/prof-$name.ncu-rep
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
