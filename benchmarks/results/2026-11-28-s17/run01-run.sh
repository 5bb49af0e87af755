#!/usr/bin/env bash
# s17 run01 (one H200): where the own fp8 GEMM's per-tile time goes. Builds: s17m (main 601df9a), s17direct
# (consumers store C straight from registers, as the odd-shape kernels do; no staging), s17noepi (consumers skip
# the store: output wrong, timing only). gemm_fp8.py row-wise at four shapes, m, direct, noepi, noepi, direct, m;
# per tensor m, direct; Nsight Compute on the own row-wise kernel and cuBLAS's at 4096x8192x2048.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm --format=csv >> $L/when.txt 2>&1
sed 's/^        if not ok:$/        if False:/' benchmarks/torch/gemm_fp8.py > /tmp/gemm_fp8_nocheck.py
grep -c "if False:" /tmp/gemm_fp8_nocheck.py
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
p() { local name=$1 b=$2 sc=$3 sh=$4 t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/$b/libhiercoll.so timeout 150 python3 /tmp/gemm_fp8_nocheck.py --scaling $sc --shapes $sh --rounds 3 --iters 10 >> $L/$name.txt 2>&1
	echo "$name $b $sc rc=$? $((SECONDS-t0))s"; }
p row-m-1 s17m row $S
p row-direct-1 s17direct row $S
p row-noepi-1 s17noepi row $S
p row-noepi-2 s17noepi row $S
p row-direct-2 s17direct row $S
p row-m-2 s17m row $S
p tensor-m-1 s17m tensor $S
p tensor-direct-1 s17direct tensor $S
p tensor-noepi-1 s17noepi tensor $S
for f in $L/row-*.txt $L/tensor-*.txt; do echo "== $(basename $f)"; grep -E '^ +[0-9]+x' $f | cut -c1-130; done
t0=$SECONDS
HIERCOLL_LIB=$PWD/build/s17m/libhiercoll.so timeout 240 ncu --kernel-name regex:'hc_gemm_e4m3|nvjet|sm90|cutlass' --launch-skip 0 --launch-count 4 \
	--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SourceCounters \
	-o $L/prof python3 benchmarks/torch/gemm_fp8.py --scaling row --shapes 4096x8192x2048 --rounds 3 --iters 2 > $L/ncu-run.txt 2>&1
echo "ncu rc=$? $((SECONDS-t0))s"
ncu -i $L/prof.ncu-rep > $L/ncu-details.txt 2>&1
ncu -i $L/prof.ncu-rep --page source --print-source sass --csv > $L/ncu-sass.csv 2>&1
grep -E "^  [a-z_0-9]+.*\(|Duration|Elapsed Cycles|Cluster|Registers Per|Shared Memory Config|Grid Size|Block Size|Compute \(SM\)|Warp Cycles Per Issued" $L/ncu-details.txt | head -80
ls -la $L
cd $OUT && tar czf logs.tgz logs && rm -rf logs
