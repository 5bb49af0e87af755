#!/usr/bin/env bash
# s28 run02 (nvidia-h200-x4): the pacing permit raised before a block's tail. Build e = exp/early-permit at its
# HEAD (main 178e450 + the permit raised once all but HIERCOLL_PERMIT_TAIL bytes of a block are copied; 0 = the
# permit after the whole block, main's pacing). bench-gemm at issue 30's seven shapes, tails 0, 4 MiB, 8 MiB in turn,
# three times; then 4 MiB under replayable signals (checks).
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L; cp .s28-run02.sh $L/run.sh
left() { echo $((585 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
pr() { grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $1 | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo; grep -o 'ends [0-9]* | copies.*' $1 | sed 's/host enqueue.*//'; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $1 | grep -vc " ok "; }
i=0
for tail in 0 4194304 8388608 0 4194304 8388608 0 4194304 8388608; do i=$((i+1)); t0=$SECONDS
	[ $(left) -lt 70 ] && { echo "skip $tail"; continue; }
	HIERCOLL_PERMIT_TAIL=$tail timeout 100 build/e/hiercoll bench-gemm --gemm own --shapes $S > $L/g4-e$((tail>>20))-$i.txt 2>&1
	echo "g4 tail $tail $i rc=$? $((SECONDS-t0))s"; pr $L/g4-e$((tail>>20))-$i.txt
done
i=$((i+1)); t0=$SECONDS
HIERCOLL_PERMIT_TAIL=4194304 timeout 60 build/e/hiercoll bench-gemm --gemm own --graphs on --reps 1 --shapes 8192x8192x8192,8192x5120x13824 > $L/e4-graphs-on-$i.txt 2>&1
echo "e4 graphs on rc=$? $((SECONDS-t0))s"; grep -h -E "^ *[0-9]+x[0-9]+x[0-9]+ " $L/e4-graphs-on-$i.txt | cut -c1-40,150-
cd $OUT && tar czf logs.tgz logs && rm -rf logs
