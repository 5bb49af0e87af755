#!/usr/bin/env bash
# s12 run05 (4x H200): a copied-in call at a 2-byte-offset base, main f9bf538 (rounds with the own
# rows in place) against 8b94a30 (rounds, a misaligned rank's own rows copied into its output): build/r5/misaligned.py
# with each build's library, main, new, new, main.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
p() { local v=$1 k=$2; local t0=$SECONDS
	HIERCOLL_LIB=$PWD/build/r5/$v/libhiercoll.so timeout 150 torchrun --nproc-per-node 4 build/r5/misaligned.py > $L/misaligned-$v-$k.txt 2>&1
	echo "$v-$k rc=$? $((SECONDS-t0))s"; grep -E "^([0-9]+ MiB|int32)" $L/misaligned-$v-$k.txt; }
p main 1; p new 1; p new 2; p main 2
cd $OUT && tar czf logs.tgz logs && rm -rf logs
