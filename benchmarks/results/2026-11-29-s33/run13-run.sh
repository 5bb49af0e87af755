#!/usr/bin/env bash
# s33 run13 (one H200): the probe (.s33-probe5.cu: + mode 19, the kernel's own block-wise mainloop, gm_mainloop_block
# of gemm/gemm.cu at c1ca75f included as it is, in the probe's ring with its scales constant in shared memory) beside
# the probe's quarters and per-tensor rings: whether the seven points between kernel and probe lie in the mainloop's code.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
mkdir -p /tmp/probe && cp .s33-probe5.cu /tmp/probe/probe.cu && cp gemm/gemm.cu /tmp/probe/gemm.cu
t0=$SECONDS; nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v -o /tmp/probe/probe /tmp/probe/probe.cu -lcuda > $L/probe-compile.txt 2>&1
echo "compile rc=$? $((SECONDS-t0))s C75: $(grep -c C75 $L/probe-compile.txt)"; grep -E "error" $L/probe-compile.txt | head -5
grep -A3 "ILi19ELi" $L/probe-compile.txt | grep -E "registers|spill" | head -3
cuobjdump -sass -fun '_Z4ringILi19ELi0ELi0ELi2EEviPfPy14CUtensorMap_stS2_' /tmp/probe/probe | grep -cE "QGMMA|FFMA" 
export PROBE_ONLY="per tensor, TMA|quarters promoted, TMA|kernel's mainloop"
for n in 132; do echo "== $n CTAs"; PROBE_CTAS=$n timeout 150 /tmp/probe/probe > $L/probe-$n.txt 2>&1; echo "rc=$?"; cat $L/probe-$n.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
