#!/usr/bin/env bash
# Compiles a self-contained kernel module (no #include, as gemm/gemm.cu is) for sm_90a on a machine without CUDA
# or a GPU and reports, per kernel, what ptxas allocated: registers, stack frame and spills. Exits 1 if any kernel
# spills or ptxas serialised a kernel's wgmmas (its C75xx notes).
#
#   scripts/kernel-check.sh [module.cu] [--sass DIR]    # default module: gemm/gemm.cu
#
# It fetches NVRTC 12.4 (Debian trixie's non-free libnvrtc12 and libnvrtc-builtins12.4, pinned by checksum)
# into $HIERCOLL_TOOLS (default ~/.cache/hiercoll-tools) the first time, and with --sass also cuobjdump
# (nvidia-cuda-toolkit, 87 MB) to write each kernel's SASS into DIR. The options are the library's NVRTC options
# (device/cuda: --gpu-architecture=sm_90a -default-device --std=c++17 -lineinfo) plus ptxas -v.
#
# A proxy, not the verdict: the GPU machines compile with NVRTC 13, whose register allocation differs (the
# twenty-seventh session saw 12.4 spill where 13 did not, and the reverse; benchmarks/RESULTS.md). Use it to
# iterate on register pressure here; the GEMM GPU tests (TestGemmCompilesAndLoadsOnGPU) decide.
set -euo pipefail
cd "$(dirname "$0")/.."
module=gemm/gemm.cu sass=""
while [ $# -gt 0 ]; do
	case $1 in
	--sass) sass=$2; shift 2 ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	*) module=$1; shift ;;
	esac
done
tools=${HIERCOLL_TOOLS:-$HOME/.cache/hiercoll-tools}
pool=http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit
mkdir -p "$tools/deb" "$tools/root"

# fetch NAME SHA256: download one pinned package and unpack it under $tools/root.
fetch() {
	local deb="$tools/deb/$1"
	if [ ! -f "$deb.ok" ]; then
		curl -fsSL -o "$deb" "$pool/$1"
		echo "$2  $deb" | sha256sum -c --quiet -
		dpkg-deb -x "$deb" "$tools/root"
		touch "$deb.ok"
	fi
}
fetch 'libnvrtc12_12.4.127%7e12.4.1-2_amd64.deb' db76acbd9ad53eae57291114b615ed21551592dee0b1160990a33066d86c251c
fetch 'libnvrtc-builtins12.4_12.4.127%7e12.4.1-2_amd64.deb' c4f9ea43c3e176a9f46b50718d546adb0dc7344432cd7d8b1483692e0416d24c
[ -n "$sass" ] && fetch 'nvidia-cuda-toolkit_12.4.131%7e12.4.1-2_amd64.deb' cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319
lib=$tools/root/usr/lib/x86_64-linux-gnu

# The driver: compile the module with NVRTC, print its log, write the CUBIN.
drv=$tools/nvrtc-check
if [ ! -x "$drv" ]; then
	cat >"$drv.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
typedef struct _nvrtcProgram* nvrtcProgram;
int nvrtcCreateProgram(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
int nvrtcCompileProgram(nvrtcProgram, int, const char* const*);
int nvrtcGetProgramLogSize(nvrtcProgram, size_t*);
int nvrtcGetProgramLog(nvrtcProgram, char*);
int nvrtcGetCUBINSize(nvrtcProgram, size_t*);
int nvrtcGetCUBIN(nvrtcProgram, char*);
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* src = malloc(n + 1);
  if (fread(src, 1, n, f) != (size_t)n) return 2;
  src[n] = 0;
  fclose(f);
  nvrtcProgram p;
  if (nvrtcCreateProgram(&p, src, argv[1], 0, 0, 0) != 0) return 2;
  const char* opts[] = {"--gpu-architecture=sm_90a", "-default-device", "--std=c++17", "-lineinfo",
                        "--ptxas-options=-v"};
  int rc = nvrtcCompileProgram(p, 5, opts);
  size_t size;
  nvrtcGetProgramLogSize(p, &size);
  char* log = malloc(size + 1);
  nvrtcGetProgramLog(p, log);
  fputs(log, stdout);
  if (rc != 0) return 1;
  nvrtcGetCUBINSize(p, &size);
  char* cubin = malloc(size);
  nvrtcGetCUBIN(p, cubin);
  FILE* o = fopen(argv[2], "wb");
  fwrite(cubin, 1, size, o);
  fclose(o);
  return 0;
}
EOF
	gcc -O1 -o "$drv" "$drv.c" -L"$lib" -l:libnvrtc.so.12 -Wl,-rpath,"$lib"
fi

cubin=$(mktemp --suffix .cubin)
log=$(mktemp)
trap 'rm -f "$cubin" "$log"' EXIT
# NVRTC opens its builtins library by name.
if ! LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$drv" "$module" "$cubin" >"$log"; then
	cat "$log" >&2
	echo "kernel-check: $module does not compile" >&2
	exit 1
fi
# ptxas prints per kernel: "Compiling entry function 'NAME'", then the stack frame and spills, then the registers.
awk '
	/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); name = substr($0, RSTART + 1, RLENGTH - 2) }
	/bytes stack frame/ { frame = $3; stores = $7; loads = $11 }
	/Used [0-9]+ registers/ { printf "%-40s %3d registers, %4d bytes stack frame, %4d spill stores, %4d spill loads\n", name, $5, frame, stores, loads; if (stores + loads + frame > 0) bad = 1 }
	END { exit bad }' "$log" && rc=0 || rc=1
# ptxas's C75xx notes: wgmmas it serialised (a wait after each), which costs a kernel far more than a spill.
if grep -q "(C75" "$log"; then
	grep "(C75" "$log" | sed 's/^ptxas info *: //' >&2
	echo "kernel-check: $module: ptxas serialised wgmmas (the C75xx notes above)" >&2
	rc=1
fi
if [ -n "$sass" ]; then
	mkdir -p "$sass"
	for k in $(grep -o "Compiling entry function '[^']*'" "$log" | cut -d"'" -f2); do
		"$tools/root/usr/bin/cuobjdump" -sass -fun "$k" "$cubin" >"$sass/$k.sass"
	done
	echo "kernel-check: SASS in $sass/"
fi
[ $rc -eq 0 ] && echo "kernel-check: $module: no kernel spills, no serialised wgmmas (NVRTC 12.4, a proxy for the GPU's NVRTC)" ||
	echo "kernel-check: $module: spills or serialised wgmmas (NVRTC 12.4)" >&2
exit $rc
