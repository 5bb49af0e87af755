#!/usr/bin/env bash
# One call's worth of GPU work on a multi-GPU machine (after gpu-build.sh):
# correctness on every world shape the GPUs allow, the demo, and a benchmark
# sweep of the tuning knobs beside NCCL. Writes $OUT/sweep.log (everything)
# and a few CSV files. Usage: scripts/gpu-sweep.sh [sizes]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export HIERCOLL_CACHE_DIR=${HIERCOLL_CACHE_DIR:-/tmp/hiercoll-cache}
H=build/hiercoll
sizes=${1:-1M,8M,32M,128M,512M,2G}
log=$OUT/sweep.log
ngpu=$(nvidia-smi -L | wc -l)
run() { echo "### $*" | tee -a "$log"; local t0=$SECONDS; "$@" >>"$log" 2>&1; local rc=$?
	echo "### exit $rc after $((SECONDS - t0))s" | tee -a "$log"; grep -E "PASS|FAIL|Error|error" "$log" | tail -n 2; }
{ date -u; nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm --format=csv; nvidia-smi topo -m; } >"$log" 2>&1
run $H doctor
run $H verify --calls 2 --repeat 1000
if [ "$ngpu" -ge 4 ]; then
	run $H verify --nodes 2 --calls 2 --repeat 200
	run $H verify --nodes 4 --calls 2 --repeat 200
fi
run $H demo
run $H bench --sizes "$sizes" --copy-streams 1,3 --chunks 0,1 --reduction-sms 16,32 --csv "$OUT/bench-1x$ngpu.csv" --png "$OUT/bench-1x$ngpu.png"
if [ "$ngpu" -ge 4 ]; then
	run env CUDA_VISIBLE_DEVICES=0,1 $H bench --sizes "$sizes" --copy-streams 1 --chunks 0,1 --csv "$OUT/bench-1x2.csv"
	run $H bench --nodes 2 --sizes 32M,128M,512M --csv "$OUT/bench-2x2-ipc.csv"
fi
grep -E "^\[rank 0\] +[0-9]|variant|###" "$log" | tail -n 80
