#!/usr/bin/env bash
# Issue 18 on one GPU: CUDA graphs, torch.compile, the store bootstrap, the
# one-rank copy and the host cost. Run from the repository root on the GPU
# machine after scripts/gpu-build.sh and scripts/build-capi.sh built build/
# elsewhere; logs go to $OUT (default ./gpu-out). Ranks beyond the one GPU
# share it (HIERCOLL_DEVICE=0; gloo for torch.distributed, as NCCL refuses
# shared GPUs).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export HIERCOLL_LIB=${HIERCOLL_LIB:-$PWD/build/libhiercoll.so}
H=build/hiercoll
shared() { env HIERCOLL_DEVICE=0 "$@"; }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" | tee "$OUT/when.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >>"$OUT/when.txt" 2>&1
# Go: a captured call replayed 100 times (1 and 2 ranks), stuck waits released at Close.
step go-graphs build/rs2d.test -test.v -test.count=1 -test.run 'TestGPUGraphReplays|TestGPURankDiesMidRun'
# The push-reduce kernel's call state on the device, and the one-rank copy.
step verify-1 $H verify --gpus 1
step verify-1x2-shared $H verify --gpus 2 --repeat 200
step verify-1x2-shared-graphs $H verify --gpus 2 --repeat 200 --graphs on
step verify-2x1-shared-graphs $H verify --nodes 2 --gpus 1 --repeat 200 --graphs on
# One GPU: a world of one rank at device-copy speed, beside NCCL.
step bench-1gpu $H bench --gpus 1 --sizes 8M,64M,512M --csv "$OUT/bench-1gpu.csv"
# The protocols' cost per call: Growing (off) against Replayable (on), 2 ranks sharing the GPU.
step bench-graphs $H bench --gpus 2 --engine sm,copy --graphs off,on --sizes 1M,2M,4M,8M --reps 5 --csv "$OUT/bench-graphs.csv"
# Host cost: the Go path's enqueue time, then Python's, layer by layer.
step hostcost-go-1 $H bench --gpus 1 --host-cost --graphs off,on
step hostcost-go-2 $H bench --gpus 2 --host-cost --graphs off,on
step hostcost-py-1 python3 benchmarks/torch/host_cost.py
step hostcost-py-2 shared torchrun --nproc-per-node 2 benchmarks/torch/host_cost.py
# PyTorch: store bootstrap, torch.cuda.graph replays, torch.compile (1, 2 and 4 ranks).
step torch-1 python3 python/tests/test_torch_graphs.py -v
step torch-2 shared torchrun --nproc-per-node 2 python/tests/test_torch_graphs.py -v
step torch-4 shared torchrun --nproc-per-node 4 python/tests/test_torch_graphs.py -v
step torch-eager-1 python3 python/tests/test_hiercoll.py -v
exit $status
