#!/usr/bin/env bash
# s37 run02 (nvidia-h200-x2): main's head (h) on 2 GPUs: hiercoll bench zero copy 1 MiB-2 GiB (twice) and registered,
# and bench-gemm's own-GEMM GEMM + RS at issue 30's seven shapes (bf16) beside c10b506 (c10, the twenty-sixth
# session's library whose 2-GPU rounds met <= 1.10x the bound; the own GEMM changed since in 75c94cc, bb5ee2b,
# 49f9f23, measured on one H200 only), builds in turn h c10 c10 h h c10.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s37-run02.sh $L/run.sh
left() { echo $((575 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
sizes=1M,4M,8M,16M,32M,64M,128M,512M,1G,2G
bench() {  # bench TAG flags...
	local t=$1 t0=$SECONDS; shift
	[ $(left) -lt 70 ] && { echo "skip bench $t"; return; }
	timeout 90 build/hiercoll bench --sizes $sizes "$@" > $L/rs-$t.txt 2>&1
	echo "bench $t rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+ ' $L/rs-$t.txt | awk '{print $1, $4, $6, $7, $10, $(NF-2), $NF}'
}
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
seven() {  # seven BUILD TAG
	local t0=$SECONDS
	[ $(left) -lt 75 ] && { echo "skip seven $1 $2"; return; }
	HIERCOLL_CACHE_DIR=/tmp/c-$1 timeout 100 build/$1/hiercoll bench-gemm --gemm own --shapes $S > $L/seven-$1-$2.txt 2>&1
	echo "seven $1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/seven-$1-$2.txt | awk '{printf "%s %s %s %s | ", $1, $3, $8, $11}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/seven-$1-$2.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo
}
mkdir -p build/h; cp build/hiercoll build/h/hiercoll
bench zc-1 --csv $L/rs-zc-1.csv
i=0
for b in h c10 c10 h; do i=$((i+1)); seven $b $i; done
bench zc-2
bench reg --register
for b in h c10; do i=$((i+1)); seven $b $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
