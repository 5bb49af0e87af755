#!/usr/bin/env bash
# The full GPU check on a multi-GPU machine, in one call (after
# scripts/gpu-build.sh and scripts/build-capi.sh built $BIN elsewhere):
# correctness on every world shape and transport, the benchmark beside NCCL
# with the engines' variants, the torch check, the C ABI from Python, CUDA
# graphs and torch.compile, the ring against the direct path, and GEMM +
# reduce-scatter with each GEMM beside torch's. Everything is logged to
# $OUT/full.log; CSVs beside it.
#   BIN=build scripts/gpu-full.sh [sections...]   sections: verify bench rail torch graphs ring gemm
# Knobs (env): SIZES, PUSH_SMS, RED_SMS, PUSH_GROUP, RAIL_LANES (lists), WITH_COPY=1,
# RAIL_BENCH= (empty: skip the rail benchmarks), STEP_TIMEOUT (s per step).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
BIN=${BIN:-build}
H=$BIN/hiercoll
log=$OUT/full.log
sections=${*:-verify bench rail torch graphs ring gemm}
ngpu=$(nvidia-smi -L | wc -l)
run() { echo "### $*" | tee -a "$log"; local t0=$SECONDS; timeout "${STEP_TIMEOUT:-150}" "$@" >>"$log" 2>&1; local rc=$?
	echo "### exit $rc after $((SECONDS - t0))s" | tee -a "$log"; }
has() { [[ " $sections " == *" $1 "* ]]; }
{ date -u; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; } >>"$log" 2>&1
if has verify; then
	run $H verify --calls 2 --repeat 1000 --timeout 60s
	run $H verify --engine copy --calls 1 --repeat 100
	run $BIN/rs2d.test -test.count=1 -test.run TestGPURankDiesMidRun
	run $H verify --max-symm 64M --calls 1 --repeat 100 # the ring under the bound
	# The pull engine's ring for large calls (nodes of 3+ GPUs), from small
	# blocks so that most cases take it, plain and registered.
	run $H verify --ring-from 64K --calls 1 --repeat 100
	run $H verify --ring-from 64K --register --dtypes bf16,int32 --calls 1 --repeat 10
	# Inputs off 16-byte alignment on every engine: at 2 bytes bf16 and fp16
	# summed, fp32 and int32 refused; at 4 bytes fp32 and int32 summed.
	for e in auto sm copy ring; do
		run $H verify --engine $e --input-offset 2 --calls 1 --repeat 10
		run $H verify --engine $e --input-offset 4 --dtypes fp32,int32 --calls 1 --repeat 10
	done
	if [ "$ngpu" -ge 4 ]; then
		run $H verify --nodes 2 --calls 2 --repeat 200
		run $H verify --nodes 4 --calls 1 --repeat 100
		run $H verify --nodes 2 --max-symm 64M --calls 1 --repeat 50
	fi
fi
if has bench; then
	run $H bench --sizes ${SIZES:-1M,2M,4M,8M,32M,128M,512M,2G} --engine sm --reduction-sms ${RED_SMS:-16,32} --csv "$OUT/bench-1x$ngpu.csv" --png "$OUT/bench-1x$ngpu.png"
	[ -n "${WITH_COPY:-}" ] && run $H bench --sizes 8M,128M,2G --engine copy --csv "$OUT/bench-1x$ngpu-copy.csv"
	[ "$ngpu" -ge 4 ] && run env CUDA_VISIBLE_DEVICES=0,1 $H bench --sizes ${SIZES:-1M,2M,4M,8M,32M,128M,512M,2G} --engine sm --reduction-sms ${RED_SMS:-16,32} --csv "$OUT/bench-1x2.csv"
fi
if has rail && [ "$ngpu" -ge 4 ]; then
	run $BIN/native_nccl.test -test.count=1
	run $BIN/native_nvshmem.test -test.count=1
	run $BIN/internode.test -test.v -test.count=1 -test.timeout=200s -test.run TestRailOverProcesses
	for t in nvshmem nccl; do run $H verify --nodes 2 --transport $t --calls 1 --repeat 50; done
	if [ "${RAIL_BENCH-1}" != "" ]; then
		for t in ipc nvshmem; do run $H bench --nodes 2 --transport $t --sizes 8M,32M,128M,512M --csv "$OUT/bench-2x2-$t.csv"; done
		run $H bench --nodes 2 --transport nccl --rail-lanes ${RAIL_LANES:-0} --sizes 8M,32M,128M,512M --csv "$OUT/bench-2x2-nccl.csv"
	fi
fi
if has torch; then
	export HIERCOLL_LIB=$PWD/$BIN/libhiercoll.so PYTHONPATH=$PWD/python
	run torchrun --nproc-per-node "$ngpu" benchmarks/torch/check_rs.py
	[ "$ngpu" -ge 4 ] && run env CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py
	run python3 -m pytest -q python/tests
	run torchrun --nproc-per-node "$ngpu" -m pytest -q python/tests/test_hiercoll.py
fi
if has graphs; then
	export HIERCOLL_LIB=$PWD/$BIN/libhiercoll.so PYTHONPATH=$PWD/python
	run $BIN/rs2d.test -test.count=1 -test.run TestGPUGraphReplays
	# Graph replay, torch.compile and the store bootstrap on every GPU.
	run torchrun --nproc-per-node "$ngpu" python/tests/test_torch_graphs.py -v
	# The two signal protocols' cost per call (Config.Graphs off and on).
	run $H bench --sizes 1M,8M,128M --graphs off,on --csv "$OUT/bench-graphs-1x$ngpu.csv"
fi
if has ring; then
	# The ring under 64 MiB of symmetric memory against the direct path,
	# in alternation (the power cap favours what runs first).
	for i in 1 2; do
		run $H bench --sizes 128M,512M,2G --engine sm --csv "$OUT/ring-direct-$i-1x$ngpu.csv"
		run $H bench --sizes 128M,512M,2G --engine ring --max-symm 64M --csv "$OUT/ring-64M-$i-1x$ngpu.csv"
	done
fi
if has gemm; then
	export HIERCOLL_LIB=$PWD/$BIN/libhiercoll.so PYTHONPATH=$PWD/python
	run bash -c "cd device/cuda && exec ../../$BIN/device_cuda.test -test.v -test.count=1 -test.run 'Gemm|BLAS' -test.skip TestBLASAgainstFakeDriver"
	run scripts/kernel-check.sh --nvrtc # the library's own NVRTC: no spills, no serialised wgmmas
	run scripts/kernel-check.sh --nvcc  # the toolkit's ptxas, which allocates differently
	run $H bench-mm --rounds 5 # the own GEMM against cuBLAS on one GPU
	for g in own cublas; do run $H bench-gemm --gemm $g --csv "$OUT/gemm-$g-1x$ngpu.csv"; done
	run torchrun --nproc-per-node "$ngpu" benchmarks/torch/gemm_baseline.py --hiercoll
	if [ "$ngpu" -ge 4 ]; then
		for g in own cublas; do run env CUDA_VISIBLE_DEVICES=0,1 $H bench-gemm --gemm $g --csv "$OUT/gemm-$g-1x2.csv"; done
		run env CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 2 benchmarks/torch/gemm_baseline.py --hiercoll
		run $H bench-gemm --nodes 2 --shapes 8192x8192x28672,8192x8192x8192 --csv "$OUT/gemm-2x2.csv"
	fi
fi
grep -E "^###|PASS|FAIL|rank 0\] +[0-9]|variant|speedup|Error|error:" "$log" | grep -v "ok  " | tail -n 120
