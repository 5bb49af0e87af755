#!/usr/bin/env bash
# The pull engine and the engines' GPU check on a multi-GPU machine (after
# scripts/gpu-build.sh or at least build/hiercoll, build/rs2d.test and
# scripts/build-capi.sh here). Logs under $OUT.
#   scripts/gpu-pull.sh [sections...]   sections: verify tests bench rounds torch
# Knobs (env): SIZES, SMS (the pull engine's SM budgets, a list).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
H=build/hiercoll
sections=${*:-verify tests bench rounds torch}
has() { [[ " $sections " == *" $1 "* ]]; }
SIZES=${SIZES:-1M,2M,4M,8M,32M,128M,512M,1G,2G}
date -u +"run at %Y-%m-%dT%H:%M:%SZ" | tee "$OUT/when.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >>"$OUT/when.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
if has verify; then
	step verify-pull $H verify --engine pull --repeat 200
	step verify-pull-rounds $H verify --engine pull --max-symm 64M --repeat 50
	step verify-sm $H verify --engine sm --repeat 100
	step verify-copy $H verify --engine copy --repeat 100
	step verify-ring $H verify --max-symm 64M --repeat 50
	if [ "$ngpu" -ge 4 ]; then
		step verify-pull-2x2 $H verify --engine pull --nodes 2 --repeat 100
		step verify-pull-2x2-rounds $H verify --engine pull --nodes 2 --max-symm 16M --repeat 50
		step verify-pull-4x1 $H verify --engine pull --nodes 4 --repeat 100
		step verify-sm-2x2 $H verify --nodes 2 --repeat 100
	fi
fi
if has tests; then
	step rs2d-gpu build/rs2d.test -test.count=1 -test.v -test.run 'TestGPU'
fi
if has bench; then
	step bench $H bench --sizes "$SIZES" --engine sm,pull --reduction-sms "${SMS:-32}" --csv "$OUT/bench-1x$ngpu.csv"
	[ "$ngpu" -ge 4 ] && step bench-2gpu env CUDA_VISIBLE_DEVICES=0,1 $H bench --sizes "$SIZES" --engine sm,pull --reduction-sms "${SMS:-32}" --csv "$OUT/bench-1x2.csv"
fi
if has rounds; then
	# Under a bound: the pull engine in rounds and the ring, beside the direct pull.
	step rounds $H bench --sizes 128M,512M,2G --engine pull,ring --max-symm 64M --csv "$OUT/rounds-1x$ngpu.csv"
	step rounds-direct $H bench --sizes 128M,512M,2G --engine pull --csv "$OUT/rounds-direct-1x$ngpu.csv"
fi
if has torch; then
	export HIERCOLL_LIB=$PWD/build/libhiercoll.so PYTHONPATH=$PWD/python
	step check-rs-pull torchrun --nproc-per-node "$ngpu" benchmarks/torch/check_rs.py --engine pull --dtypes bf16,int32 --shapes 4096x4096,8192x8192,16384x16384
	step pytest python3 -m pytest -q python/tests --ignore=python/tests/test_torch_graphs.py
	step torch-graphs torchrun --nproc-per-node "$ngpu" python/tests/test_torch_graphs.py -v
	step pytest-ranks torchrun --nproc-per-node "$ngpu" -m pytest -q python/tests/test_hiercoll.py
fi
exit $status
