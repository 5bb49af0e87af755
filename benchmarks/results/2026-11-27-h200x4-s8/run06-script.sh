#!/usr/bin/env bash
# Session 8 run 06: the branch's last state (new) against main (2548454): GPU checks of the pull
# engine in rounds and whole; the rounds under 64 MiB and the direct path, builds in turn.
set -uo pipefail
source scripts/gpu-env.sh
B=build/r6
{ date -u +"run at %Y-%m-%dT%H:%M:%SZ"; echo "builds: main = 2548454, new = $(cat $B/new.commit)"; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; } >"$OUT/when.txt" 2>&1
N=$B/new/hiercoll
step verify-rounds-1x4 $N verify --engine pull --max-symm 64M --repeat 30
step verify-rounds-2x2 $N verify --engine pull --nodes 2 --max-symm 16M --repeat 30
step verify-rounds-2gpu env CUDA_VISIBLE_DEVICES=0,1 $N verify --engine pull --max-symm 64M --repeat 30
step verify-auto-1x4 $N verify --repeat 10
step verify-auto-2x2 $N verify --nodes 2 --repeat 10
step verify-pull-4x1 $N verify --engine pull --nodes 4 --repeat 10
if [ $status -eq 0 ]; then
S=128M,512M,2G
for i in 1 2; do
  if [ $i = 1 ]; then order="main new"; else order="new main"; fi
  for b in $order; do step rounds-$b-$i $B/$b/hiercoll bench --sizes $S --engine pull --max-symm 64M; done
  for b in $order; do step direct-$b-$i $B/$b/hiercoll bench --sizes 1M,4M,32M,128M,512M,2G --engine pull; done
done
for b in main new; do step rounds-$b-2gpu env CUDA_VISIBLE_DEVICES=0,1 $B/$b/hiercoll bench --sizes $S --engine pull --max-symm 64M; done
for b in new main; do step direct-$b-2gpu env CUDA_VISIBLE_DEVICES=0,1 $B/$b/hiercoll bench --sizes $S --engine pull; done
fi
cd "$OUT" && tar czf logs.tgz *.txt && rm -f *.txt
exit $status
