#!/usr/bin/env bash
# s14 run10: the ring's launches keep their counts in a call state on the device (replayable in CUDA graphs):
# the ring's GPU test, graph replays (ring and the pull engine's ring on 3 ranks), verify under both protocols,
# and on 4 GPUs the standing rows at 512 MiB / 2 GiB, captured and not.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
B=build/s14g
ngpu=$(nvidia-smi -L | wc -l)
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >> $L/when.txt 2>&1
v() { local name=$1; shift; local t0=$SECONDS
	timeout 150 $B/hiercoll verify "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; tail -2 $L/$name.txt; }
b() { local name=$1; shift; local t0=$SECONDS
	timeout 100 $B/hiercoll bench "$@" > $L/$name.txt 2>&1; local rc=$?
	echo "$name rc=$rc $((SECONDS-t0))s"; grep -E '^ +[0-9]{5,}|^variant' $L/$name.txt | cut -c1-150; }
t0=$SECONDS; timeout 60 $B/ring.test -test.run GPU -test.v > $L/ring-gpu-test.txt 2>&1; echo "ring.test rc=$? $((SECONDS-t0))s"; tail -2 $L/ring-gpu-test.txt
t0=$SECONDS; timeout 240 $B/rs2d.test -test.run 'TestGPUGraphReplays/3ranks' -test.v > $L/rs2d-graphs-ring.txt 2>&1; echo "graphs rc=$? $((SECONDS-t0))s"; grep -E "^(---|    ---|ok|PASS|FAIL)" $L/rs2d-graphs-ring.txt
v verify-ring --engine ring --calls 1 --repeat 100
v verify-ring-graphs --engine ring --graphs on --calls 1 --repeat 100
if [ "$ngpu" -ge 4 ]; then
  v verify-pullring-graphs --ring-from 64K --graphs on --calls 1 --repeat 100
  v verify-pullring --ring-from 64K --calls 1 --repeat 100
  b zc --sizes 512M,2G
  b cap --sizes 512M,2G --graphs on --capture
  b cap-off --sizes 512M,2G --graphs on --capture --ring-from off
else
  v verify-pullring-graphs-g4 --gpus 4 --ring-from 64K --graphs on --calls 1 --repeat 30 --dtypes bf16,int32
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
