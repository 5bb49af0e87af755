#!/usr/bin/env bash
# s37 run01 (nvidia-h200-x2): main's head checked on 2 GPUs (gpu-run.sh quick: doctor, the CUDA backend's tests with
# the two-device ones, NCCL's tests, verify 1x2, a short bench; the GEMM GPU tests through their `hopper` helper, not
# run on a GPU since dcabe17), then fused fp8 GEMM + RS on 2 ranks with each scaling, three processes per scaling in
# turn (gemm_fp8.py's default GEMM + RS shapes; never measured on 2 GPUs before).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run01.sh $L/run.sh
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
t0=$SECONDS; OUT=$L/check timeout 200 bash scripts/gpu-run.sh quick > $L/gpu-run.txt 2>&1
echo "gpu-run quick rc=$? $((SECONDS-t0))s"; grep -E "^=== .*exit|FAIL|--- SKIP" $L/gpu-run.txt | head -30
t0=$SECONDS; (cd gemm && timeout 150 ../build/gemm.test -test.run 'OnGPU' -test.v > $L/gemm-gpu-tests.txt 2>&1); rc=$?
echo "gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)" $L/gemm-gpu-tests.txt | head -30
export PYTHONPATH=$PWD/python
fused() {  # fused SCALING TAG
	local t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip fused $1 $2"; return; }
	HIERCOLL_LIB=$PWD/build/h/libhiercoll.so HIERCOLL_CACHE_DIR=/tmp/c-h timeout 100 torchrun --nproc-per-node 2 \
		benchmarks/torch/gemm_fp8.py --scaling $1 --rounds 3 --iters 10 > $L/rs2-$1-$2.txt 2>&1
	echo "fused $1 rc=$? $((SECONDS-t0))s"; grep -E "^ *[0-9]+x" $L/rs2-$1-$2.txt | cut -c1-250
}
i=0
for r in 1 2 3; do for sc in row block tensor; do i=$((i+1)); fused $sc $i; done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
