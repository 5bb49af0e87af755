#!/usr/bin/env bash
# Compiles a self-contained kernel module (no #include, as gemm/gemm.cu is) for sm_90a on a machine without CUDA
# or a GPU and reports, per kernel, what ptxas allocated: registers, stack frame and spills. Exits 1 if any kernel
# spills or ptxas serialised a kernel's wgmmas (its C75xx notes), or, with --sass, if a kernel's k-tile loop keeps
# its stage index in per-thread registers (a SHFL in the loop: the block-wise kernel lost 7-11% to that).
#
#   scripts/kernel-check.sh [module.cu] [--sass DIR] [--nvcc]    # default module: gemm/gemm.cu
#
# With --nvcc (a machine with the CUDA toolkit: the GPU machines) it compiles with the toolkit's nvcc and its
# ptxas (CUDA 13.0 there, as the library's NVRTC): it saw the wgmmas serialised that NVRTC 12.4 let run, which the
# GEMM GPU tests do not see (such a kernel loads and computes right, only slower), though its register allocation
# can still differ from the library's NVRTC (thirty-fifth session: clean where NVRTC gave one kernel an 8-byte
# stack frame). Otherwise it fetches NVRTC 12.4 (Debian trixie's non-free libnvrtc12 and libnvrtc-builtins12.4,
# pinned by checksum) into $HIERCOLL_TOOLS (default ~/.cache/hiercoll-tools) the first time, and with --sass also cuobjdump
# (nvidia-cuda-toolkit, 87 MB) to write each kernel's SASS into DIR. The options are the library's NVRTC options
# (device/cuda: --gpu-architecture=sm_90a -default-device --std=c++17 -lineinfo) plus ptxas -v.
#
# A proxy, not the verdict: the GPU machines compile with NVRTC 13, whose register allocation differs (the
# twenty-seventh session saw 12.4 spill where 13 did not, and the reverse; benchmarks/RESULTS.md), and whose
# ptxas serialised wgmmas that 12.4 let run (its C7518 note, thirty-fifth session). Use it to iterate here;
# on a GPU machine run --nvcc too; the GEMM GPU tests (TestGemmCompilesAndLoadsOnGPU) decide on spills.
set -euo pipefail
cd "$(dirname "$0")/.."
module=gemm/gemm.cu sass="" nvcc=""
while [ $# -gt 0 ]; do
	case $1 in
	--sass) sass=$2; shift 2 ;;
	--nvcc) nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc); shift ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	*) module=$1; shift ;;
	esac
done
if [ -n "$nvcc" ] && [ ! -x "$nvcc" ]; then
	echo "kernel-check: --nvcc: no nvcc here (the CUDA toolkit's, on PATH or in /usr/local/cuda/bin)" >&2
	exit 2
fi
cuobjdump=${nvcc:+$(dirname "$nvcc")/cuobjdump}
if [ -z "$nvcc" ]; then # the fetched NVRTC 12.4 and its driver (to the matching fi)
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
cuobjdump=$tools/root/usr/bin/cuobjdump

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
fi

cubin=$(mktemp --suffix .cubin)
log=$(mktemp)
trap 'rm -f "$cubin" "$log"' EXIT
# NVRTC opens its builtins library by name; nvcc takes the library's NVRTC options.
if [ -n "$nvcc" ]; then
	"$nvcc" -arch=sm_90a -cubin -std=c++17 -lineinfo -Xptxas -v -o "$cubin" -x cu "$module" >"$log" 2>&1
else
	LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$drv" "$module" "$cubin" >"$log"
fi || {
	cat "$log" >&2
	echo "kernel-check: $module does not compile" >&2
	exit 1
}
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
		"$cuobjdump" -sass -fun "$k" "$cubin" >"$sass/$k.sass"
	done
	echo "kernel-check: SASS in $sass/"
	# Each kernel's k-tile loop (the innermost loop around a wgmma): its length, and whether its stage index
	# lives in uniform registers. A SHFL in it means ptxas keeps the index per thread and moves it to the uniform
	# registers of the wgmma descriptors every k tile (gm_gather's comment says what caused that once).
	python3 - "$sass" <<'PY' || rc=1
import glob, os, re, sys
bad = 0
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.sass"))):
    ins = [(int(m.group(1), 16), m.group(2)) for m in (re.match(r"\s+/\*([0-9a-f]{4,5})\*/\s+(.*?)\s*;", l) for l in open(f)) if m]
    loop = None  # the shortest span from a backward branch's target to the branch that holds a wgmma
    for a, t in ins:
        m = re.search(r"\bBRA\b.*0x([0-9a-f]+)", t)
        if not m or int(m.group(1), 16) >= a:
            continue
        body = [u for b, u in ins if int(m.group(1), 16) <= b <= a]
        if any(re.search(r"[HQ]GMMA\.", u) for u in body) and (loop is None or len(body) < len(loop)):
            loop = body
    if loop is None:
        continue
    shfl = sum("SHFL" in t for t in loop)
    bad |= shfl > 0
    print(f"{os.path.basename(f)[:-5]:40s} k-tile loop {len(loop):3d} instructions, stage index "
          + ("per thread (SHFL in the loop)" if shfl else "uniform"))
if bad:
    print("kernel-check: a k-tile loop keeps its stage index per thread", file=sys.stderr)
sys.exit(bad)
PY
fi
by="NVRTC 12.4, a proxy for the GPU's NVRTC"
[ -n "$nvcc" ] && by=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p')
[ $rc -eq 0 ] && echo "kernel-check: $module: no kernel spills, no serialised wgmmas${sass:+, uniform stage indices} ($by)" ||
	echo "kernel-check: $module: spills, serialised wgmmas${sass:+ or a per-thread stage index} ($by)" >&2
exit $rc
