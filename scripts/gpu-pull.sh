#!/usr/bin/env bash
# The pull engine on a multi-GPU machine (after scripts/gpu-build.sh here):
# correctness on every world shape the GPUs allow, then the benchmark beside
# NCCL with the SM engine and the pull engine's SM budgets in one run, on
# every GPU and on two. Logs under $OUT.
#   scripts/gpu-pull.sh [sizes] [pull SM budgets]
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
H=build/hiercoll
SIZES=${1:-1M,2M,4M,8M,32M,128M,512M,1G,2G}
SMS=${2:-16,32,64,132}
date -u +"run at %Y-%m-%dT%H:%M:%SZ" | tee "$OUT/when.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >>"$OUT/when.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
step verify-pull $H verify --engine pull --repeat 200
if [ "$ngpu" -ge 4 ]; then
	step verify-pull-2x2 $H verify --engine pull --nodes 2 --repeat 100
	step verify-pull-4x1 $H verify --engine pull --nodes 4 --repeat 100
fi
step bench $H bench --sizes "$SIZES" --engine sm,pull --reduction-sms "$SMS" --csv "$OUT/bench-1x$ngpu.csv"
if [ "$ngpu" -ge 4 ]; then
	step bench-2gpu env CUDA_VISIBLE_DEVICES=0,1 $H bench --sizes "$SIZES" --engine sm,pull --reduction-sms "$SMS" --csv "$OUT/bench-1x2.csv"
fi
exit $status
