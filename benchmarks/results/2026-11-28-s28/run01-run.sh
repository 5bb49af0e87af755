#!/usr/bin/env bash
# s28 run01 (nvidia-h200-x4): the GEMM + RS tail on 4 GPUs. Builds: t = main at ce8801c (a traced call prints when
# the copy engine's last reduce passed its waits); o = exp/waits-first (the reduction stream waits for the peers'
# arrivals before the own block's signals); p = exp/own-on-producer-2 (the own node step's reduction on the GEMM
# stream after the GEMM, s23's exp/own-on-producer onto main; not where the GEMM sums). bench-gemm at four shapes,
# t o p three times; then p under replayable signals (checks).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s28-run01.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x8192,4096x8192x8192,2048x8192x28672,8192x5120x13824
pr() { grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $1 | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; grep -o 'ends [0-9]* | copies.*' $1 | sed 's/host enqueue.*//'; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $1 | grep -vc " ok "; }
i=0
for x in t o p t o p t o p; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $x"; continue; }
	timeout 100 build/$x/hiercoll bench-gemm --gemm own --shapes $S > $L/g4-$x-$i.txt 2>&1
	echo "g4 $x $i rc=$? $((SECONDS-t0))s"; pr $L/g4-$x-$i.txt
done
i=$((i+1)); t0=$SECONDS
timeout 100 build/p/hiercoll bench-gemm --gemm own --graphs on --reps 1 --shapes 8192x8192x8192,2048x8192x28672 > $L/p-graphs-on-$i.txt 2>&1
echo "p graphs on rc=$? $((SECONDS-t0))s"; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $L/p-graphs-on-$i.txt | cut -c1-40,150-
cd $OUT && tar czf logs.tgz logs && rm -rf logs
