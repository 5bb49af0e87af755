#!/usr/bin/env bash
# Pending (twenty-eighth session's exp/peer-streams; script written again in the thirty-sixth, the branch's own
# being lost): whether a copy stream per node peer shortens GEMM + RS on 4 GPUs at the copy-bound shapes. Needs
# nvidia-h200-x4 (or nvidia-h100-x4). Times `ps` (main plus the branch's diff) beside `head` (main) in turn, three
# processes each: bench-gemm with the own GEMM at 8192^3 and 4096x8192x8192 (copy-bound: issue 30's GEMM + RS goal
# missed there) and at 2048x8192x28672 and 8192x5120x13824 (GEMM-bound: must not regress). The diff applies to main
# as of 514a156 (checked: it builds and its CPU tests pass).
#
# Build here into the ignored build/ (carry build/head and build/ps):
#   go build -trimpath -ldflags='-s -w' -o build/head/hiercoll ./cmd/hiercoll
#   top=$PWD; git worktree add /tmp/ps HEAD && (cd /tmp/ps && git apply benchmarks/results/2026-11-28-s28/run03-peer-streams.diff &&
#     go build -trimpath -ldflags='-s -w' -o "$top/build/ps/hiercoll" ./cmd/hiercoll); git worktree remove --force /tmp/ps
# Run from the repository root: bash benchmarks/results/pending/peer-streams-4gpu.sh
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
one() {  # one BUILD TAG: bench-gemm, own GEMM, the four shapes
	local t0=$SECONDS
	[ $(left) -lt 90 ] && { echo "skip $1 $2"; return; }
	HIERCOLL_CACHE_DIR=/tmp/c-$1 timeout 120 build/$1/hiercoll bench-gemm --gemm own \
		--shapes 8192x8192x8192,4096x8192x8192,2048x8192x28672,8192x5120x13824 > $L/gemm-$1-$2.txt 2>&1
	echo "$1 $2 rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/gemm-$1-$2.txt | cut -c1-200
}
i=0
for b in head ps ps head head ps; do i=$((i+1)); one $b $i; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
