package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// This file is the Matmul capability of the CUDA backend: device.Matmul over
// cuBLAS, loaded at run time like the driver (blas_cgo.go binds it; without
// cgo there is none, blas_nocgo.go):
//
//   - Library: $HIERCOLL_CUBLAS when set (and then nothing else); else
//     libcublas.so.13 and .12 on the loader path; else under
//     $CUDA_HOME/lib64, /usr/local/cuda/lib64 and the Python wheels
//     (<site-packages>/nvidia/cu13/lib, <site-packages>/nvidia/cublas/lib).
//     A file found in a directory has its libcublasLt (which libcublas
//     needs) preloaded from the same directory by full path, so that
//     directory need not be on the loader path.
//   - One cuBLAS handle per Device, created on first use with the device's
//     primary context current (cublasCreate_v2 binds a handle to the
//     current context), math mode CUBLAS_DEFAULT_MATH |
//     CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (so split-K partial
//     sums stay fp32, as GemmSpec promises). Calls on the handle are
//     serialised by a mutex: its stream and SM target are handle state.
//     ReleaseBLAS destroys it; Device.Close does not (see ReleaseBLAS).
//   - Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, and a row-major X with
//     leading dimension ld is the column-major Xᵀ with the same ld, so the
//     call is cublasGemmEx(OP_N, OP_N, m=N, n=M, k=K, B, LDB, A, LDA, C,
//     LDC): operands swapped, nothing transposed.
//   - fp32 accumulation: CUBLAS_COMPUTE_32F with alpha = 1, beta = 0 as
//     host floats; A, B and C of CUDA_R_16BF (14), CUDA_R_16F (2) or
//     CUDA_R_32F (0).
//   - GemmSpec.SMs goes to cublasSetSmCountTarget (0 restores cuBLAS's own
//     choice); on a cuBLAS without it the target is ignored (BLASInfo says
//     so), and only the reduction side of an overlap is bounded.

// EnvCUBLAS names the libcublas to load instead of searching for one.
const EnvCUBLAS = "HIERCOLL_CUBLAS"

// cuBLAS and CUDA library enum values (cublas_api.h, library_types.h),
// checked against several public transcriptions of those headers.
const (
	blasOpN                 = 0  // CUBLAS_OP_N
	blasOpT                 = 1  // CUBLAS_OP_T
	cudaR32F                = 0  // CUDA_R_32F
	cudaR16F                = 2  // CUDA_R_16F
	cudaR16BF               = 14 // CUDA_R_16BF
	blasCompute32F          = 68 // CUBLAS_COMPUTE_32F
	blasGemmDefault         = -1 // CUBLAS_GEMM_DEFAULT
	blasDefaultMath         = 0  // CUBLAS_DEFAULT_MATH
	blasDisallowReducedPrec = 16 // CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
	libMajorVersion         = 0  // MAJOR_VERSION (libraryPropertyType)
	libMinorVersion         = 1  // MINOR_VERSION
	libPatchLevel           = 2  // PATCH_LEVEL
)

// blasStatus is a cublasStatus_t.
type blasStatus int

// cublasStatus_t values.
const (
	blasSuccess         blasStatus = 0
	blasNotInitialized  blasStatus = 1
	blasAllocFailed     blasStatus = 3
	blasInvalidValue    blasStatus = 7
	blasArchMismatch    blasStatus = 8
	blasMappingError    blasStatus = 11
	blasExecutionFailed blasStatus = 13
	blasInternalError   blasStatus = 14
	blasNotSupported    blasStatus = 15
	blasLicenseError    blasStatus = 16
)

var blasStatusNames = map[blasStatus]string{
	blasSuccess: "CUBLAS_STATUS_SUCCESS", blasNotInitialized: "CUBLAS_STATUS_NOT_INITIALIZED",
	blasAllocFailed: "CUBLAS_STATUS_ALLOC_FAILED", blasInvalidValue: "CUBLAS_STATUS_INVALID_VALUE",
	blasArchMismatch: "CUBLAS_STATUS_ARCH_MISMATCH", blasMappingError: "CUBLAS_STATUS_MAPPING_ERROR",
	blasExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED", blasInternalError: "CUBLAS_STATUS_INTERNAL_ERROR",
	blasNotSupported: "CUBLAS_STATUS_NOT_SUPPORTED", blasLicenseError: "CUBLAS_STATUS_LICENSE_ERROR",
}

// gemmEx is the argument list of one cublasGemmEx call (column-major).
type gemmEx struct {
	transA, transB int
	m, n, k        int
	a              device.Ptr
	aType, lda     int
	b              device.Ptr
	bType, ldb     int
	c              device.Ptr
	cType, ldc     int
	compute, algo  int
}

// blasLib is cuBLAS as the rest of the package sees it. Calls that take a
// ctx make that context current inside the same C call, as the driver
// binding does; ctxErr is the CUresult of doing so (0 when it worked, and
// then the call's status is meaningful).
type blasLib interface {
	path() string
	version() string // "13.0.2", or "" when cuBLAS cannot say
	hasSMCountTarget() bool
	create(ctx uintptr) (h uintptr, st blasStatus, ctxErr result)
	destroy(ctx, h uintptr) (blasStatus, result)
	setStream(ctx, h, stream uintptr) (blasStatus, result)
	setMathMode(ctx, h uintptr, mode int) (blasStatus, result)
	setSMCountTarget(ctx, h uintptr, n int) (blasStatus, result)
	gemmEx(ctx, h uintptr, g gemmEx) (blasStatus, result)
	statusString(st blasStatus) string // "" when cuBLAS cannot describe it
}

// BLASError is a cuBLAS call that failed: which call, the cublasStatus_t,
// and cuBLAS's own name and description of it. errors.Is maps
// NOT_SUPPORTED, ARCH_MISMATCH and LICENSE_ERROR onto
// device.ErrNotSupported and INVALID_VALUE onto device.ErrInvalidArgument.
type BLASError struct {
	Call   string // "cublasGemmEx(m=8192, n=2048, k=7168, bf16)"
	Status int
	Name   string // "CUBLAS_STATUS_NOT_SUPPORTED"
	Msg    string
}

func (e *BLASError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("cuda: cuBLAS %s: %s", e.Call, e.Name)
	}
	return fmt.Sprintf("cuda: cuBLAS %s: %s (%s)", e.Call, e.Name, e.Msg)
}

// Is reports whether the error belongs to one of the device sentinels.
func (e *BLASError) Is(target error) bool {
	switch target {
	case device.ErrNotSupported:
		switch blasStatus(e.Status) {
		case blasNotSupported, blasArchMismatch, blasLicenseError:
			return true
		}
	case device.ErrInvalidArgument:
		return blasStatus(e.Status) == blasInvalidValue
	}
	return false
}

// blasCheck turns a call's outcome into an error: the context switch's
// CUresult first, then the status.
func (d *Device) blasCheck(lib blasLib, st blasStatus, ctxErr result, format string, args ...any) error {
	if ctxErr != cudaSuccess {
		return fmt.Errorf("cuda: %s: making the context current for cuBLAS %s: %w", d.name, fmt.Sprintf(format, args...),
			newError(d.drv, ctxErr, "cuCtxSetCurrent"))
	}
	if st == blasSuccess {
		return nil
	}
	name, ok := blasStatusNames[st]
	if !ok {
		name = fmt.Sprintf("cublasStatus_t(%d)", int(st))
	}
	e := &BLASError{Call: fmt.Sprintf(format, args...), Status: int(st), Name: name}
	if lib != nil {
		e.Msg = lib.statusString(st)
	}
	return e
}

// blasCandidate is one libcublas to try, with the libcublasLt to preload
// from its directory ("" for a bare name the loader resolves).
type blasCandidate struct {
	lib, lt string
}

// blasCandidates lists the libraries openBLAS tries, in order (see the top of
// this file).
func blasCandidates() []blasCandidate {
	if p := os.Getenv(EnvCUBLAS); p != "" {
		return []blasCandidate{withLt(p)}
	}
	var out []blasCandidate
	majors := []string{"13", "12"}
	for _, v := range majors {
		out = append(out, blasCandidate{lib: "libcublas.so." + v})
	}
	var dirs []string
	if home := os.Getenv("CUDA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	for _, sp := range dl.SitePackages() {
		dirs = append(dirs, filepath.Join(sp, "nvidia", "cu13", "lib"), filepath.Join(sp, "nvidia", "cublas", "lib"))
	}
	for _, dir := range dirs {
		for _, v := range majors {
			p := filepath.Join(dir, "libcublas.so."+v)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				out = append(out, withLt(p))
			}
		}
	}
	return out
}

// withLt pairs a libcublas path with the libcublasLt of the same major
// version in its directory, when there is one.
func withLt(p string) blasCandidate {
	c := blasCandidate{lib: p}
	if !strings.Contains(p, "/") {
		return c
	}
	base := filepath.Base(p)
	lt := filepath.Join(filepath.Dir(p), strings.Replace(base, "libcublas.", "libcublasLt.", 1))
	if lt != p {
		if fi, err := os.Stat(lt); err == nil && !fi.IsDir() {
			c.lt = lt
		}
	}
	return c
}

// blasState is the process's cuBLAS (a successful load is kept, a failed
// one retried on the next call) and the handle of each Device that used it.
var blasState struct {
	mu      sync.Mutex
	lib     blasLib
	handles map[*Device]*blasHandle
}

// openBLAS loads cuBLAS for the driver; tests replace it.
var openBLAS = func(drv api) (blasLib, error) { return openBLASFrom(drv, blasCandidates()) }

// blasHandle is one Device's cuBLAS handle and the state set on it.
type blasHandle struct {
	mu     sync.Mutex
	lib    blasLib
	h      uintptr
	stream uintptr // the stream last set (0 is the legacy default stream cuBLAS starts with)
	sms    int     // the SM target last set (0: cuBLAS's default)
	closed bool
}

// blas returns the device's handle, loading cuBLAS and creating the handle
// on first use.
func (d *Device) blas() (*blasHandle, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	blasState.mu.Lock()
	defer blasState.mu.Unlock()
	if h, ok := blasState.handles[d]; ok {
		return h, nil
	}
	if blasState.lib == nil {
		lib, err := openBLAS(d.drv)
		if err != nil {
			return nil, err
		}
		blasState.lib = lib
	}
	lib := blasState.lib
	h, st, ctxErr := lib.create(d.ctx)
	if err := d.blasCheck(lib, st, ctxErr, "cublasCreate_v2 on %s", d.name); err != nil {
		return nil, err
	}
	st, ctxErr = lib.setMathMode(d.ctx, h, blasDefaultMath|blasDisallowReducedPrec)
	if err := d.blasCheck(lib, st, ctxErr, "cublasSetMathMode(DEFAULT_MATH|DISALLOW_REDUCED_PRECISION_REDUCTION)"); err != nil {
		st, ctxErr = lib.destroy(d.ctx, h)
		return nil, errors.Join(err, d.blasCheck(lib, st, ctxErr, "cublasDestroy_v2"))
	}
	if blasState.handles == nil {
		blasState.handles = map[*Device]*blasHandle{}
	}
	bh := &blasHandle{lib: lib, h: h}
	blasState.handles[d] = bh
	return bh, nil
}

// BLASInfo says which cuBLAS a device multiplies with.
type BLASInfo struct {
	Path    string // the library that was loaded
	Version string // "13.0.2", or "" when cuBLAS cannot say
	// SMCountTarget reports whether cuBLAS has cublasSetSmCountTarget, so
	// that GemmSpec.SMs bounds the GEMM; without it the GEMM uses every SM
	// and only the other side of an overlap can be bounded.
	SMCountTarget bool
}

// BLAS loads cuBLAS and creates this device's handle if that has not
// happened yet, and reports which library it is. Without cuBLAS the error
// wraps device.ErrNotSupported and names every candidate tried.
func (d *Device) BLAS() (BLASInfo, error) {
	h, err := d.blas()
	if err != nil {
		return BLASInfo{}, err
	}
	return BLASInfo{Path: h.lib.path(), Version: h.lib.version(), SMCountTarget: h.lib.hasSMCountTarget()}, nil
}

// Library names the GEMM's library (loading cuBLAS if that has not
// happened yet): "cuBLAS 13.1.0 (path), cublasGemmEx", or why it is
// missing.
func (d *Device) Library() string {
	info, err := d.BLAS()
	if err != nil {
		return fmt.Sprintf("no cuBLAS (%v)", err)
	}
	return fmt.Sprintf("cuBLAS %s (%s), cublasGemmEx", info.Version, info.Path)
}

// ReleaseBLAS destroys the device's cuBLAS handle (cublasDestroy_v2, which
// waits for the handle's work), if it has one; Close does it too (a handle
// must not outlive its context). A later Gemm creates a new handle.
func (d *Device) ReleaseBLAS() error {
	blasState.mu.Lock()
	h, ok := blasState.handles[d]
	delete(blasState.handles, d)
	blasState.mu.Unlock()
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if err := d.live(); err != nil {
		return fmt.Errorf("cuda: release cuBLAS handle: %w", err)
	}
	st, ctxErr := h.lib.destroy(d.ctx, h.h)
	return d.blasCheck(h.lib, st, ctxErr, "cublasDestroy_v2 on %s", d.name)
}

var _ device.Matmul = (*Device)(nil)

// cudaDataType returns the CUDA library type of dt.
func cudaDataType(dt dtype.DType) (int, error) {
	switch dt {
	case dtype.BF16:
		return cudaR16BF, nil
	case dtype.F16:
		return cudaR16F, nil
	case dtype.F32:
		return cudaR32F, nil
	}
	return 0, fmt.Errorf("cuda: gemm of %v: %w", dt, device.ErrNotSupported)
}

// Gemm implements device.Matmul with cublasGemmEx (see the top of this
// file for the mapping of row-major onto column-major). Like every call on
// a stream it returns once the GEMM is enqueued. g.SMs above the device's
// multiprocessor count means all of them. The operands' extents are not
// checked against their allocations (that costs a driver call each); an
// out-of-bounds GEMM faults on the device.
func (d *Device) Gemm(s device.Stream, g device.GemmSpec) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	if err := g.Check(); err != nil {
		return fmt.Errorf("cuda: %s: %w", d.name, err)
	}
	g = g.Dense()
	ty, err := cudaDataType(g.DType)
	if err != nil {
		return err
	}
	if g.SMs >= d.info.SMs {
		g.SMs = 0
	}
	h, err := d.blas()
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("cuda: %s: gemm on a released cuBLAS handle: %w", d.name, device.ErrClosed)
	}
	if h.stream != st.h {
		sc, ce := h.lib.setStream(d.ctx, h.h, st.h)
		if err := d.blasCheck(h.lib, sc, ce, "cublasSetStream_v2(%s)", st.name); err != nil {
			return err
		}
		h.stream = st.h
	}
	if g.SMs != h.sms && h.lib.hasSMCountTarget() {
		sc, ce := h.lib.setSMCountTarget(d.ctx, h.h, g.SMs)
		if err := d.blasCheck(h.lib, sc, ce, "cublasSetSmCountTarget(%d)", g.SMs); err != nil {
			return err
		}
		h.sms = g.SMs
	}
	// Row-major B [K, N] is column-major [N, K] as it is; B given as
	// [N, K] (BT) is its transpose.
	transB := blasOpN
	if g.BT {
		transB = blasOpT
	}
	call := gemmEx{
		transA: transB, transB: blasOpN,
		m: g.N, n: g.M, k: g.K,
		a: g.B, aType: ty, lda: g.LDB,
		b: g.A, bType: ty, ldb: g.LDA,
		c: g.C, cType: ty, ldc: g.LDC,
		compute: blasCompute32F, algo: blasGemmDefault,
	}
	sc, ce := h.lib.gemmEx(d.ctx, h.h, call)
	return d.blasCheck(h.lib, sc, ce, "cublasGemmEx(row-major %dx%dx%d %v, LDA=%d LDB=%d LDC=%d, %s)",
		g.M, g.N, g.K, g.DType, g.LDA, g.LDB, g.LDC, st.name)
}
