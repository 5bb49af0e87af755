//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int nvrtcResult;                 // enum: NVRTC_SUCCESS = 0
typedef struct _nvrtcProgram *nvrtcProgram;

static int call_nvrtcVersion(void *fn, int *major, int *minor) {
	return ((nvrtcResult (*)(int *, int *))fn)(major, minor);
}

// nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
//                    int numHeaders, const char *const *headers, const char *const *includeNames)
static int call_nvrtcCreateProgram(void *fn, uintptr_t *prog, const char *src, const char *name) {
	nvrtcProgram p = NULL;
	nvrtcResult r = ((nvrtcResult (*)(nvrtcProgram *, const char *, const char *, int,
			const char *const *, const char *const *))fn)(&p, src, name, 0, NULL, NULL);
	*prog = (uintptr_t)p;
	return r;
}

// nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options)
static int call_nvrtcCompileProgram(void *fn, uintptr_t prog, int n, char **options) {
	return ((nvrtcResult (*)(nvrtcProgram, int, const char *const *))fn)((nvrtcProgram)prog, n, (const char *const *)options);
}

// nvrtcGetProgramLogSize, nvrtcGetCUBINSize: (nvrtcProgram, size_t *)
static int call_nvrtcSize(void *fn, uintptr_t prog, size_t *n) {
	return ((nvrtcResult (*)(nvrtcProgram, size_t *))fn)((nvrtcProgram)prog, n);
}

// nvrtcGetProgramLog, nvrtcGetCUBIN: (nvrtcProgram, char *)
static int call_nvrtcBytes(void *fn, uintptr_t prog, char *out) {
	return ((nvrtcResult (*)(nvrtcProgram, char *))fn)((nvrtcProgram)prog, out);
}

// nvrtcDestroyProgram(nvrtcProgram *prog)
static int call_nvrtcDestroyProgram(void *fn, uintptr_t prog) {
	nvrtcProgram p = (nvrtcProgram)prog;
	return ((nvrtcResult (*)(nvrtcProgram *))fn)(&p);
}

// const char *nvrtcGetErrorString(nvrtcResult)
static const char *call_nvrtcGetErrorString(void *fn, int r) {
	return ((const char *(*)(nvrtcResult))fn)(r);
}

// hc_libraryOf returns the file of the shared object that holds sym.
static const char *hc_libraryOf(void *sym) {
	Dl_info info;
	if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) {
		return NULL;
	}
	return info.dli_fname;
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// nvrtcLib is libnvrtc with its entry points (all unversioned names).
type nvrtcLib struct {
	lib          *dl.Library
	file         string
	major, minor int
	builtins     *dl.Library // preloaded from beside libnvrtc, if found

	mu                                        sync.Mutex // one compile at a time
	create, compileProgram, destroy, errorStr unsafe.Pointer
	logSize, log, cubinSize, cubin            unsafe.Pointer
}

var nvrtcOnce = sync.OnceValues(openNVRTC)

// loadNVRTC returns the process's NVRTC, loading it on first use.
func loadNVRTC() (compiler, error) {
	n, err := nvrtcOnce()
	if err != nil {
		return nil, err
	}
	return n, nil
}

// nvrtcCandidates lists where NVRTC may be, newest major first: an explicit
// $HIERCOLL_NVRTC, then each name on the loader path, under $CUDA_HOME/lib64
// and under /usr/local/cuda/lib64.
func nvrtcCandidates() []string {
	var dirs []string
	if home := os.Getenv("CUDA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	var out []string
	if p := os.Getenv("HIERCOLL_NVRTC"); p != "" {
		out = append(out, p)
	}
	for _, name := range []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"} {
		out = append(out, name)
		for _, dir := range dirs {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

func openNVRTC() (*nvrtcLib, error) {
	lib, err := dl.Open(nvrtcCandidates()...)
	if err != nil {
		return nil, fmt.Errorf("cuda: no NVRTC (needed to compile kernels): %v: %w", err, device.ErrNotSupported)
	}
	n := &nvrtcLib{lib: lib, file: lib.Path}
	var version unsafe.Pointer
	for _, s := range []struct {
		dst  *unsafe.Pointer
		name string
	}{
		{&version, "nvrtcVersion"},
		{&n.create, "nvrtcCreateProgram"},
		{&n.compileProgram, "nvrtcCompileProgram"},
		{&n.destroy, "nvrtcDestroyProgram"},
		{&n.errorStr, "nvrtcGetErrorString"},
		{&n.logSize, "nvrtcGetProgramLogSize"},
		{&n.log, "nvrtcGetProgramLog"},
		{&n.cubinSize, "nvrtcGetCUBINSize"},
		{&n.cubin, "nvrtcGetCUBIN"},
	} {
		p, err := lib.Sym(s.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: NVRTC at %s is unusable: %v: %w", lib.Path, err, device.ErrNotSupported)
		}
		*s.dst = p
	}
	var major, minor C.int
	if r := C.call_nvrtcVersion(version, &major, &minor); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcVersion: %s: %w", n.errorString(int(r)), device.ErrNotSupported)
	}
	n.major, n.minor = int(major), int(minor)
	if f := C.hc_libraryOf(version); f != nil {
		n.file = C.GoString(f)
	}
	n.builtins = preloadBuiltins(filepath.Dir(n.file), n.major, n.minor)
	return n, nil
}

// preloadBuiltins opens libnvrtc-builtins from NVRTC's own directory by its
// full path. NVRTC dlopens it by name during a compile, which fails when
// that directory is not on the loader path; once loaded, the name resolves
// to the loaded copy. Best effort: nil when there is none.
func preloadBuiltins(dir string, major, minor int) *dl.Library {
	matches, _ := filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so*"))
	if len(matches) == 0 {
		return nil
	}
	want := fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor)
	sort.SliceStable(matches, func(i, j int) bool {
		return filepath.Base(matches[i]) == want && filepath.Base(matches[j]) != want
	})
	for _, m := range matches {
		if lib, err := dl.Open(m); err == nil {
			return lib
		}
	}
	return nil
}

func (n *nvrtcLib) version() string { return fmt.Sprintf("%d.%d", n.major, n.minor) }

func (n *nvrtcLib) path() string { return n.file }

func (n *nvrtcLib) errorString(r int) string {
	if s := C.call_nvrtcGetErrorString(n.errorStr, C.int(r)); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("nvrtcResult(%d)", r)
}

func (n *nvrtcLib) fail(call string, r C.int) error {
	return fmt.Errorf("cuda: %s: %s", call, n.errorString(int(r)))
}

// compile runs one NVRTC program. A compile error carries NVRTC's full log.
func (n *nvrtcLib) compile(source, name string, options []string) ([]byte, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	csrc := C.CString(source)
	defer C.free(unsafe.Pointer(csrc))
	cname := C.CString(name + ".cu")
	defer C.free(unsafe.Pointer(cname))

	var prog C.uintptr_t
	if r := C.call_nvrtcCreateProgram(n.create, &prog, csrc, cname); r != 0 {
		return nil, "", n.fail("nvrtcCreateProgram("+name+")", r)
	}
	defer C.call_nvrtcDestroyProgram(n.destroy, prog)

	// The option array and its strings live in C memory.
	copts := (**C.char)(C.malloc(C.size_t(len(options)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(copts))
	slots := unsafe.Slice(copts, len(options)+1)
	for i, o := range options {
		slots[i] = C.CString(o)
	}
	slots[len(options)] = nil
	defer func() {
		for _, s := range slots[:len(options)] {
			C.free(unsafe.Pointer(s))
		}
	}()
	r := C.call_nvrtcCompileProgram(n.compileProgram, prog, C.int(len(options)), copts)
	log := n.programLog(prog)
	if r != 0 {
		return nil, log, fmt.Errorf("cuda: NVRTC %s could not compile module %s (%s): %s:\n%s",
			n.version(), name, strings.Join(options, " "), n.errorString(int(r)), log)
	}
	var size C.size_t
	if r := C.call_nvrtcSize(n.cubinSize, prog, &size); r != 0 {
		return nil, log, n.fail("nvrtcGetCUBINSize("+name+")", r)
	}
	if size == 0 {
		return nil, log, fmt.Errorf("cuda: NVRTC produced no CUBIN for module %s (%s)", name, strings.Join(options, " "))
	}
	cubin := make([]byte, int(size))
	if r := C.call_nvrtcBytes(n.cubin, prog, (*C.char)(unsafe.Pointer(&cubin[0]))); r != 0 {
		return nil, log, n.fail("nvrtcGetCUBIN("+name+")", r)
	}
	return cubin, log, nil
}

// programLog returns the program's log without its terminating NUL.
func (n *nvrtcLib) programLog(prog C.uintptr_t) string {
	var size C.size_t
	if r := C.call_nvrtcSize(n.logSize, prog, &size); r != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, int(size))
	if r := C.call_nvrtcBytes(n.log, prog, (*C.char)(unsafe.Pointer(&buf[0]))); r != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}
