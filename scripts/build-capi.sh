#!/usr/bin/env bash
# Builds hiercoll's C ABI (needs Go and a C compiler; no CUDA):
#   build/libhiercoll.so   the shared library
#   build/libhiercoll.h    the header the Go tool writes
#   build/hiercoll.h       the documented header (capi/hiercoll.h)
# and copies the library and header into python/hiercoll/, where the package
# used from the checkout (PYTHONPATH=python) finds them. `pip install ./python`
# builds its own library (or packages HIERCOLL_LIB's); for a machine without
# Go, scripts/build-wheel.sh makes a wheel, or point HIERCOLL_LIB at the file.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
CGO_ENABLED=1 go build -trimpath -buildmode=c-shared -o build/libhiercoll.so ./capi
cp capi/hiercoll.h build/hiercoll.h
cp build/libhiercoll.so capi/hiercoll.h python/hiercoll/
# go-nvml must not be linked: its unresolved NVML symbols break RTLD_NOW loads.
if go list -deps ./capi | grep -q go-nvml; then
	echo "build-capi: ./capi depends on go-nvml; it must not" >&2
	exit 1
fi
ls -l build/libhiercoll.so build/libhiercoll.h build/hiercoll.h
