#!/usr/bin/env bash
# s40 run03 (nvidia-h200-x2): main's head (3ec7951, build h) on 2 GPUs: hiercoll bench zero copy 1 MiB-2 GiB in
# three processes and registered once between them (issue 30's 2-GPU ratios against NCCL by a median of three runs;
# the thirty-seventh session had two zero-copy runs).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s40-run03.sh $L/run.sh
left() { echo $((570 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
sizes=1M,4M,8M,16M,32M,64M,128M,512M,1G,2G
bench() {  # bench TAG flags...
	local t=$1 t0=$SECONDS; shift
	[ $(left) -lt 80 ] && { echo "skip bench $t"; return; }
	timeout 100 build/h/hiercoll bench --sizes $sizes "$@" > $L/rs-$t.txt 2>&1
	echo "bench $t rc=$? $((SECONDS-t0))s"; grep -E '^ +[0-9]+ ' $L/rs-$t.txt | awk '{print $1, $4, $7, $10, $(NF-2), $NF}'
}
bench zc-1 --csv $L/rs-zc-1.csv
bench zc-2
bench reg --register
bench zc-3
cd $OUT && tar czf logs.tgz logs && rm -rf logs
