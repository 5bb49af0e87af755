#!/usr/bin/env bash
# GPU check, half 2 of 2 — run on the GPU machine from the repository root,
# after scripts/gpu-build.sh built build/ elsewhere. Logs go to $OUT (default
# ./gpu-out). Usage: scripts/gpu-run.sh [quick|full] [extra bench flags...]
#   quick: doctor, backend tests, verify and a short bench (any GPU count)
#   full:  adds the full 1 MiB..2 GiB bench on every GPU and on subsets
set -uo pipefail
mode=${1:-full}; shift || true
source "$(dirname "$0")/gpu-env.sh"
H=build/hiercoll
date -u +"run at %Y-%m-%dT%H:%M:%SZ" | tee "$OUT/when.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >>"$OUT/when.txt" 2>&1
nvidia-smi topo -m >>"$OUT/when.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
step doctor $H doctor
step cudatest bash -c 'cd device/cuda && exec ../../build/device_cuda.test -test.v -test.count=1 -test.skip TestAgainstFakeDriver'
step nccltest build/native_nccl.test -test.v -test.count=1
step verify $H verify
if [ "$ngpu" -ge 4 ]; then
	step verify-2x2 $H verify --nodes 2
	step verify-4x1 $H verify --nodes 4
	# The bounded-memory ring, and on 2 nodes its rail in rounds.
	step verify-ring $H verify --max-symm 1M
	step verify-2x2-ring $H verify --nodes 2 --max-symm 1M
elif [ "$ngpu" -eq 1 ]; then
	# Several ranks sharing the one GPU: IPC, peer write-values and the
	# emulated-node path run for real (slowly; NCCL refuses shared GPUs).
	step verify-1x2-shared $H verify --gpus 2 --repeat 200
	step verify-2x1-shared $H verify --nodes 2 --gpus 1 --repeat 200
	step verify-1x2-shared-ring $H verify --gpus 2 --max-symm 1M --repeat 200
fi
if [ "$mode" = quick ]; then
	step bench $H bench --sizes 1M,8M,32M,128M,512M --csv "$OUT/bench.csv" --png "$OUT/bench.png" "$@"
else
	step bench $H bench --csv "$OUT/bench.csv" --png "$OUT/bench.png" "$@"
	if [ "$ngpu" -ge 4 ]; then
		step bench-2gpu env CUDA_VISIBLE_DEVICES=0,1 $H bench --csv "$OUT/bench-2gpu.csv" "$@"
	fi
fi
exit $status
