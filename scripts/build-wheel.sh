#!/usr/bin/env bash
# Builds the Python package's wheel, build/hiercoll-<version>-py3-none-linux_<arch>.whl
# (or into the directory given as $1), with python/hiercoll_build.py: no pip,
# no setuptools, no network. The wheel carries libhiercoll.so: HIERCOLL_LIB's
# file when set, else one built here with Go (and gcc). It installs without Go
# or network, e.g. on a GPU machine:
#   pip install --no-index build/hiercoll-*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build}")
cd python
python3 -c '
import sys
import hiercoll_build
try:
    name = hiercoll_build.build_wheel(sys.argv[1])
except hiercoll_build.BuildError as e:
    sys.exit(f"build-wheel: {e}")
print(f"{sys.argv[1]}/{name}")
' "$out"
