#!/usr/bin/env bash
# Compiles a self-contained kernel module (no #include, as gemm/gemm.cu is) for sm_90a (no GPU needed) and
# reports, per kernel, what ptxas allocated: registers, stack frame and spills. Exits 1 if any kernel
# spills or ptxas serialised a kernel's wgmmas (its C75xx notes), or, with --sass, if a kernel's k-tile loop keeps
# its stage index in per-thread registers (a SHFL in the loop: each k tile then pays to move it into the uniform
# registers of the wgmma descriptors).
#
#   scripts/kernel-check.sh [module.cu] [--sass DIR] [--nvcc | --nvrtc]    # default module: gemm/gemm.cu
#
# Three compilers. By default (a machine without CUDA) it fetches NVRTC 12.4 (Debian trixie's non-free libnvrtc12
# and libnvrtc-builtins12.4, pinned by checksum) into $HIERCOLL_TOOLS (default ~/.cache/hiercoll-tools) the first
# time, and with --sass also cuobjdump (nvidia-cuda-toolkit, 87 MB) to write each kernel's SASS into DIR: a proxy,
# since the GPU machines' NVRTC 13 allocates registers differently (12.4 has spilled where 13 did not, and the
# reverse) and its ptxas has serialised wgmmas that 12.4 let run (C7518).
# On a GPU machine, --nvrtc compiles with the NVRTC the library itself loads ($HIERCOLL_NVRTC, else libnvrtc.so.13
# or .12 on the loader's path, under $CUDA_HOME/lib64 or /usr/local/cuda/lib64, as device/cuda does): its verdict
# on spills is the GEMM GPU tests' (TestGemmCompilesAndLoadsOnGPU), for any module file, with no Go build; --nvcc
# compiles with the toolkit's nvcc and ptxas, whose allocation can differ from NVRTC's (it has been clean where
# NVRTC gave one kernel an 8-byte stack frame). The GEMM GPU tests cannot see serialised wgmmas (such a
# kernel loads and computes right, only slower): these checks do. The options are the library's NVRTC options
# (device/cuda: --gpu-architecture=sm_90a -default-device --std=c++17 -lineinfo) plus ptxas -v.
set -euo pipefail
# The arguments' paths are the caller's (resolved before the cd to the repository root); the default module's is
# the repository's.
module="" sass="" nvcc="" nvrtc=""
while [ $# -gt 0 ]; do
	case $1 in
	--sass) sass=$(realpath -m -- "$2"); shift 2 ;;
	--nvcc) nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc); shift ;;
	--nvrtc) nvrtc=1; shift ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	*) module=$(realpath -m -- "$1"); shift ;;
	esac
done
cd "$(dirname "$0")/.."
module=${module:-gemm/gemm.cu}
if [ -n "$nvcc" ] && [ -n "$nvrtc" ]; then
	echo "kernel-check: --nvcc and --nvrtc are two compilers: name one" >&2
	exit 2
fi
if [ -n "$nvcc" ] && [ ! -x "$nvcc" ]; then
	echo "kernel-check: --nvcc: no nvcc here (the CUDA toolkit's, on PATH or in /usr/local/cuda/bin)" >&2
	exit 2
fi
tools=${HIERCOLL_TOOLS:-$HOME/.cache/hiercoll-tools}
nvrtc_lib="" # empty: the driver looks where the library does
if [ -n "$nvcc" ]; then
	cuobjdump=$(dirname "$nvcc")/cuobjdump
elif [ -n "$nvrtc" ]; then
	cuobjdump=$(command -v cuobjdump || echo "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump")
else # the fetched NVRTC 12.4 (to the matching fi)
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
nvrtc_lib=$tools/root/usr/lib/x86_64-linux-gnu/libnvrtc.so.12
cuobjdump=$tools/root/usr/bin/cuobjdump
fi

# The NVRTC driver: opens NVRTC (the path given, else where device/cuda/nvrtc_cgo.go looks) and its builtins from
# beside it, prints "NVRTC path major.minor", compiles the module, prints the log, writes the CUBIN.
drv=$tools/nvrtc-open
if [ -z "$nvcc" ] && [ ! -x "$drv" ]; then
	mkdir -p "$tools"
	cat >"$drv.$$.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int (*create_t)(void**, const char*, const char*, int, const char* const*, const char* const*);
typedef int (*compile_t)(void*, int, const char* const*);
typedef int (*size_fn)(void*, size_t*);
typedef int (*get_fn)(void*, char*);
typedef int (*version_t)(int*, int*);
static void* try_open(const char* path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
static void* open_nvrtc(const char* given) {
  if (given && *given) return try_open(given);
  const char* env = getenv("HIERCOLL_NVRTC");
  void* h = env && *env ? try_open(env) : 0;
  if (h) return h;
  const char* home = getenv("CUDA_HOME");
  const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  char path[4096];
  for (int i = 0; i < 3; i++) {
    h = try_open(names[i]);
    if (!h && home) {
      snprintf(path, sizeof path, "%s/lib64/%s", home, names[i]);
      h = try_open(path);
    }
    if (!h) {
      snprintf(path, sizeof path, "/usr/local/cuda/lib64/%s", names[i]);
      h = try_open(path);
    }
    if (h) return h;
  }
  return 0;
}
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  void* h = open_nvrtc(argc > 3 ? argv[3] : 0);
  if (!h) {
    fprintf(stderr, "no NVRTC: %s\n", dlerror());
    return 2;
  }
  version_t version = (version_t)dlsym(h, "nvrtcVersion");
  create_t create = (create_t)dlsym(h, "nvrtcCreateProgram");
  compile_t compile = (compile_t)dlsym(h, "nvrtcCompileProgram");
  size_fn log_size = (size_fn)dlsym(h, "nvrtcGetProgramLogSize"), cubin_size = (size_fn)dlsym(h, "nvrtcGetCUBINSize");
  get_fn get_log = (get_fn)dlsym(h, "nvrtcGetProgramLog"), get_cubin = (get_fn)dlsym(h, "nvrtcGetCUBIN");
  if (!version || !create || !compile || !log_size || !cubin_size || !get_log || !get_cubin) return 2;
  int major = 0, minor = 0;
  version(&major, &minor);
  Dl_info info;
  char file[4096] = "?";
  if (dladdr((void*)version, &info) && info.dli_fname) {
    char dir[4096], path[4300];
    snprintf(file, sizeof file, "%s", info.dli_fname);
    snprintf(dir, sizeof dir, "%s", file);
    snprintf(path, sizeof path, "%s/libnvrtc-builtins.so.%d.%d", dirname(dir), major, minor);
    try_open(path);  // NVRTC opens its builtins by name: from beside it, as device/cuda preloads them
  }
  printf("NVRTC %s %d.%d\n", file, major, minor);
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* src = malloc(n + 1);
  if (fread(src, 1, n, f) != (size_t)n) return 2;
  src[n] = 0;
  fclose(f);
  void* p;
  if (create(&p, src, argv[1], 0, 0, 0) != 0) return 2;
  const char* opts[] = {"--gpu-architecture=sm_90a", "-default-device", "--std=c++17", "-lineinfo",
                        "--ptxas-options=-v"};
  int rc = compile(p, 5, opts);
  size_t size;
  log_size(p, &size);
  char* log = malloc(size + 1);
  get_log(p, log);
  fputs(log, stdout);
  if (rc != 0) return 1;
  cubin_size(p, &size);
  char* cubin = malloc(size);
  get_cubin(p, cubin);
  FILE* o = fopen(argv[2], "wb");
  fwrite(cubin, 1, size, o);
  fclose(o);
  return 0;
}
EOF
	# built under this shell's own names, then renamed: checks may run side by side
	gcc -O1 -o "$drv.$$" "$drv.$$.c" -ldl && rm -f "$drv.$$.c" && mv -f "$drv.$$" "$drv"
fi

cubin=$(mktemp --suffix .cubin)
log=$(mktemp)
trap 'rm -f "$cubin" "$log"' EXIT
# nvcc takes the library's NVRTC options.
rc=0
if [ -n "$nvcc" ]; then
	"$nvcc" -arch=sm_90a -cubin -std=c++17 -lineinfo -Xptxas -v -o "$cubin" -x cu "$module" >"$log" 2>&1 || rc=$?
else
	"$drv" "$module" "$cubin" ${nvrtc_lib:+"$nvrtc_lib"} >"$log" || rc=$?
fi
if [ $rc -ne 0 ]; then
	cat "$log" >&2
	[ -z "$nvcc" ] && [ $rc -eq 2 ] && { echo "kernel-check: no NVRTC to compile with, or $module unreadable" >&2; exit 2; }
	# Past 128 the compile step died of a signal (NVRTC 12.4 here has, on a variant of gemm.cu), not of an error the module has.
	[ $rc -gt 128 ] && { echo "kernel-check: the compile step crashed (signal $((rc - 128))) on $module: no verdict; try --nvrtc or --nvcc on a GPU machine" >&2; exit 1; }
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
by=$(sed -n 's/^NVRTC \(.*\) \([0-9.]*\)$/NVRTC \2 at \1/p' "$log")
[ -z "$nvcc$nvrtc" ] && by="NVRTC 12.4, a proxy for the GPU's NVRTC"
[ -n "$nvcc" ] && by=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p')
[ $rc -eq 0 ] && echo "kernel-check: $module: no kernel spills, no serialised wgmmas${sass:+, uniform stage indices} ($by)" ||
	echo "kernel-check: $module: spills or serialised wgmmas${sass:+ or a per-thread stage index}, above ($by)" >&2
exit $rc
