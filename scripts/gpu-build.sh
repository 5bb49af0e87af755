#!/usr/bin/env bash
# GPU check, half 1 of 2 — run where Go is installed (the GPU machines have no
# Go toolchain). Builds the CLI and the GPU test binaries into build/, which
# .git/info/exclude keeps out of git; carry build/ to the GPU machine and run
# scripts/gpu-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
go build -trimpath -ldflags='-s -w' -o build/hiercoll ./cmd/hiercoll
for pkg in device/cuda native/nccl native/nvshmem rs2d internode kernels gemm; do
	go test -c -trimpath -ldflags='-s -w' -o "build/$(echo "$pkg" | tr / _).test" "./$pkg"
done
ls -l build
