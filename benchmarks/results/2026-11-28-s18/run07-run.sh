#!/usr/bin/env bash
# s18 run07 (GPU 0 of 4 H200s): the GEMM kernel's storer and row-scale loader walking the CTA's finished tiles
# through one helper (gm_next_final; build w) against main (build m): the module's SASS of both builds compared,
# the GEMM's GPU tests on w, then gemm_fp8.py row-wise and per tensor m, w, w, m where the SASS differs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
export CUDA_VISIBLE_DEVICES=0  # one GPU
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for b in m w; do
	HIERCOLL_CACHE_DIR=/tmp/cache-$b timeout 60 build/$b/hiercoll bench-mm --shapes 256x256x128 --rounds 3 --iters 1 > $L/mm-tiny-$b.txt 2>&1; echo "mm-tiny-$b rc=$?"
	f=$(ls /tmp/cache-$b/hiercoll_gemm-*.cubin | head -1); tail -c +50 "$f" > /tmp/$b.cubin
	$CUOBJ -sass /tmp/$b.cubin | sed -E 's@/\*[0-9a-f]{4}\*/@@g' > $L/sass-$b.txt; echo "sass-$b $(wc -l < $L/sass-$b.txt) lines"
done
diff $L/sass-m.txt $L/sass-w.txt > $L/sass.diff; echo "sass diff rc=$? $(wc -l < $L/sass.diff) lines"
t0=$SECONDS; (cd gemm && timeout 150 ../build/w/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmScalingsOnGPU' -test.v > $L/w-gemm-gpu-tests.txt 2>&1); echo "w gemm GPU tests rc=$? $((SECONDS-t0))s"
grep -E "^(--- |ok|FAIL|PASS)|spill|panic" $L/w-gemm-gpu-tests.txt | head -8
if [ -s $L/sass.diff ]; then
	export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
	S=8192x8192x7168,16384x4096x3584,4096x8192x2048,8192x8192x14336
	for x in "row m" "row w" "tensor w" "tensor m"; do set -- $x; t0=$SECONDS
		HIERCOLL_LIB=$PWD/build/$2/libhiercoll.so timeout 60 python3 benchmarks/torch/gemm_fp8.py --scaling $1 --shapes $S --rounds 3 --iters 10 > $L/$1-$2-$SECONDS.txt 2>&1
		echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+x' $L/$1-$2-*.txt | tail -4 | cut -c1-24,180-212; done
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
