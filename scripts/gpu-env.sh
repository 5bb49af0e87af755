# Sourced by the GPU-machine scripts (gpu-run.sh, gpu-graphs.sh, gpu-full.sh):
# the repository root as the working directory, $OUT for the logs (default
# ./gpu-out), NVLink multicast off everywhere (see DESIGN.md: NCCL's,
# NVSHMEM's, torch's and hiercoll's own NVLS engine), the kernel cache, and
# step NAME command...: run, log to $OUT/NAME.txt, show its tail, remember a
# failure in $status.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
unset HIERCOLL_ALLOW_MULTICAST
export HIERCOLL_CACHE_DIR=${HIERCOLL_CACHE_DIR:-/tmp/hiercoll-cache}
status=0
step() {
	local name=$1; shift
	echo "=== $name: $*"
	local t0=$SECONDS
	"$@" >"$OUT/$name.txt" 2>&1; local rc=$?
	tail -n 25 "$OUT/$name.txt"
	echo "=== $name: exit $rc after $((SECONDS - t0))s"
	[ $rc -eq 0 ] || status=1
}
