#!/usr/bin/env bash
# Pending (forty-second session): what couples the bimodal fused fp8 timings on 4 GPUs. In the fortieth session
# (4 H200s, `3ec7951`) the row-wise and per-tensor fused GEMM + RS calls at 8192^3 and 4096x8192x28672 took 0.370-0.532
# and 0.377-0.555 ms between processes while the block-wise call held within 2% (HISTORY, fortieth session; re-read
# in the forty-first). Each slot here runs, back to back on the same GPUs: gemm_fp8.py row-wise on 4 ranks (the
# comparison that swung), then bench-gemm's fused row-wise call at the two shapes, whose traced call says per rank
# when the GEMM ended, when each copy started and landed and when the reduce and the call ended; and the GPUs'
# clocks and power between. A slow slot's trace beside a fast one's tells whether the GEMM itself, the copies or the
# reduce takes the extra time (the lead: the persistent GEMM's CTAs and the call's reduce or copy work contending).
# Needs nvidia-h200-x4 (or nvidia-h100-x4).
#
# Build here from main into the ignored build/ (carry build/head):
#   CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -buildmode=c-shared -o build/head/libhiercoll.so ./capi
#   go build -trimpath -ldflags='-s -w' -o build/head/hiercoll ./cmd/hiercoll
# Run from the repository root: bash benchmarks/results/pending/fp8-bimodal-4gpu.sh
# (NPROC=1 SLOTS=1 tries the script's commands on one GPU: gemm_fp8.py then times the GEMM alone.)
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp "$0" $L/run.sh
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/head/libhiercoll.so
clocks() { nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> $L/clocks.txt 2>&1; }
NPROC=${NPROC:-4}
for i in $(seq 1 ${SLOTS:-4}); do
	[ $(left) -lt 100 ] && { echo "skip slot $i"; break; }
	echo "slot $i $(date -u +%T)" >> $L/clocks.txt; clocks
	t0=$SECONDS
	timeout 90 torchrun --nproc-per-node $NPROC benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --iters 10 \
		> $L/torch-row-$i.txt 2>&1
	echo "torch row $i rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x" $L/torch-row-$i.txt | cut -c1-220
	clocks; t0=$SECONDS
	timeout 90 build/head/hiercoll bench-gemm --input e4m3 --scaling row --shapes 8192x8192x8192,4096x8192x28672 \
		> $L/bench-row-$i.txt 2>&1
	echo "bench-gemm row $i rc=$? $((SECONDS-t0))s"; grep -E "^[0-9]+x[0-9]+x[0-9]+ |traced call" $L/bench-row-$i.txt | cut -c1-220
	clocks
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
