#!/usr/bin/env bash
# s26 run03 (nvidia-h200-x4): branch exp/chunk-arrive rebased on main a01490c (ca: a chunk's arrival once the
# segments that cover it are copied) with --chunks 2 and 4 against main (m) at issue 30's seven shapes, in turn;
# then ca captured and replayable with chunks 2, and m captured.
set -uo pipefail
source scripts/gpu-env.sh
tar xJf build/pk3.txz -C build
L=$OUT/logs; mkdir -p $L; cp .s26-run03.sh $L/run.sh
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for x in "ca 2" "ca 4" "m 0" "ca 4" "ca 2" "m 0" "ca 2" "ca 4" "m 0"; do set -- $x; b=$1; c=$2; i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 120 ] && { echo "skip $x"; continue; }
	timeout 130 build/$b/hiercoll bench-gemm --gemm own --chunks $c --shapes $S > $L/bf16-$b-c$c-$i.txt 2>&1
	echo "$b c$c $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/bf16-$b-c$c-$i.txt | awk '{printf "%s %s | ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/bf16-$b-c$c-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; done
for g in "cap-ca ca --chunks 2 --graphs on --capture" "replay-ca ca --chunks 2 --graphs on" "cap-m m --graphs on --capture"; do set -- $g; n=$1; b=$2; shift 2; t0=$SECONDS
	[ $(left) -lt 60 ] && { echo "skip $n"; continue; }
	timeout 100 build/$b/hiercoll bench-gemm --gemm own --shapes $S "$@" > $L/$n.txt 2>&1; echo "$n rc=$? $((SECONDS-t0))s"
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/$n.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
