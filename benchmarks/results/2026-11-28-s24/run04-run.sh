#!/usr/bin/env bash
# s24 run04 (2 H200s): where ss's row-wise GEMM kernel spills: its SASS from the kernel cache (after the GEMM tests compile it).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
cp scripts/.s24-run04.sh $L/run.sh
(cd gemm && timeout 100 ../build/s24s/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU' > /dev/null 2>&1)
ls -la $HIERCOLL_CACHE_DIR | head
export PATH=$PATH:/usr/local/cuda/bin
for f in $HIERCOLL_CACHE_DIR/*gemm*.cubin; do tail -c +50 "$f" > /tmp/x.cubin
	cuobjdump -sass -fun hc_gemm_e4m3_bf16_nk_row /tmp/x.cubin > $L/row-sass.txt 2>&1 && break; done
wc -l $L/row-sass.txt
grep -n -E "STL|LDL" $L/row-sass.txt | head -20
for n in $(grep -n -E "STL|LDL" $L/row-sass.txt | head -4 | cut -d: -f1); do echo "--- $n"; sed -n "$((n-25)),$((n+3))p" $L/row-sass.txt | cut -c1-110; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
