#!/usr/bin/env bash
# s35 run09 (one H200, no GPU work): gm_desc_b (the stage's B descriptor in one helper) leaves the SASS unchanged
# under the machine's CUDA 13.0: kernel-check --nvcc --sass on the working tree's gemm.cu and on main's (d595420),
# every kernel's SASS compared.
set -uo pipefail
L=$OUT/logs; mkdir -p $L
timeout 120 scripts/kernel-check.sh --nvcc --sass /tmp/new > $L/kernel-check-new.txt 2>&1; echo "new rc=$?"; tail -1 $L/kernel-check-new.txt
timeout 120 scripts/kernel-check.sh build/m35/gemm-main.cu --nvcc --sass /tmp/old > $L/kernel-check-old.txt 2>&1; echo "old rc=$?"; tail -1 $L/kernel-check-old.txt
n=0; d=0; for f in /tmp/old/*.sass; do n=$((n+1)); cmp -s $f /tmp/new/$(basename $f) || { d=$((d+1)); echo "differs: $(basename $f)"; }; done
echo "$n kernels compared, $d differ" | tee $L/compare.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
