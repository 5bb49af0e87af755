package cuda

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// mockBLAS records the calls the binding makes and answers with set
// statuses, so the binding's logic (operand mapping, handle state, errors)
// is tested without any library.
type mockBLAS struct {
	noSMTarget bool
	gemmStatus blasStatus
	ctxErr     result
	handles    int
	calls      []string
	gemms      []gemmEx
	streams    []uintptr
	smTargets  []int
	mathModes  []int
	ctxs       map[uintptr]bool
}

func (m *mockBLAS) path() string           { return "/mock/libcublas.so.13" }
func (m *mockBLAS) version() string        { return "13.0.0" }
func (m *mockBLAS) hasSMCountTarget() bool { return !m.noSMTarget }
func (m *mockBLAS) statusString(st blasStatus) string {
	if st == blasInvalidValue {
		return "an invalid numeric value was used as an argument"
	}
	return ""
}
func (m *mockBLAS) note(ctx uintptr, call string) {
	m.calls = append(m.calls, call)
	m.ctxs[ctx] = true
}
func (m *mockBLAS) create(ctx uintptr) (uintptr, blasStatus, result) {
	m.note(ctx, "create")
	m.handles++
	return uintptr(0x100 + m.handles), blasSuccess, cudaSuccess
}
func (m *mockBLAS) destroy(ctx, h uintptr) (blasStatus, result) {
	m.note(ctx, "destroy")
	return blasSuccess, cudaSuccess
}
func (m *mockBLAS) setStream(ctx, h, s uintptr) (blasStatus, result) {
	m.note(ctx, "setStream")
	m.streams = append(m.streams, s)
	return blasSuccess, cudaSuccess
}
func (m *mockBLAS) setMathMode(ctx, h uintptr, mode int) (blasStatus, result) {
	m.note(ctx, "setMathMode")
	m.mathModes = append(m.mathModes, mode)
	return blasSuccess, cudaSuccess
}
func (m *mockBLAS) setSMCountTarget(ctx, h uintptr, n int) (blasStatus, result) {
	m.note(ctx, "setSMCountTarget")
	m.smTargets = append(m.smTargets, n)
	return blasSuccess, cudaSuccess
}
func (m *mockBLAS) gemmEx(ctx, h uintptr, g gemmEx) (blasStatus, result) {
	m.note(ctx, "gemmEx")
	m.gemms = append(m.gemms, g)
	return m.gemmStatus, m.ctxErr
}

// withMockBLAS installs m as the process's cuBLAS for the test.
func withMockBLAS(t *testing.T, m *mockBLAS) {
	t.Helper()
	m.ctxs = map[uintptr]bool{}
	saved := openBLAS
	blasState.mu.Lock()
	savedLib, savedHandles := blasState.lib, blasState.handles
	blasState.lib, blasState.handles = nil, nil
	blasState.mu.Unlock()
	openBLAS = func(api) (blasLib, error) { return m, nil }
	t.Cleanup(func() {
		openBLAS = saved
		blasState.mu.Lock()
		blasState.lib, blasState.handles = savedLib, savedHandles
		blasState.mu.Unlock()
	})
}

func mockDevice() (*Device, *stream, *stream) {
	d := &Device{name: "cuda:7 (mock)", ctx: 0xc7, info: device.Info{SMs: 132}}
	return d, &stream{dev: d, h: 0x5001, name: "s1"}, &stream{dev: d, h: 0x5002, name: "s2"}
}

func TestGemmMapsRowMajorOntoCublas(t *testing.T) {
	m := &mockBLAS{}
	withMockBLAS(t, m)
	d, s1, s2 := mockDevice()
	g := device.GemmSpec{M: 48, N: 80, K: 32, A: 0xa000, B: 0xb000, C: 0xc000, DType: dtype.BF16}
	require.NoError(t, d.Gemm(s1, g))
	require.Equal(t, []gemmEx{{
		transA: blasOpN, transB: blasOpN,
		m: 80, n: 48, k: 32, // column-major Cᵀ[N, M] = Bᵀ[N, K] · Aᵀ[K, M]
		a: 0xb000, aType: cudaR16BF, lda: 80,
		b: 0xa000, bType: cudaR16BF, ldb: 32,
		c: 0xc000, cType: cudaR16BF, ldc: 80,
		compute: blasCompute32F, algo: blasGemmDefault,
	}}, m.gemms)
	require.Equal(t, []int{blasDefaultMath | blasDisallowReducedPrec}, m.mathModes)
	require.Equal(t, map[uintptr]bool{0xc7: true}, m.ctxs, "every call runs with the device's context")

	// Strided fp16 on the same stream: no second setStream; SM targets
	// set when they change, all-or-more meaning cuBLAS's default.
	g2 := device.GemmSpec{M: 3, N: 5, K: 7, LDA: 9, LDB: 6, LDC: 11, A: 0xa0, B: 0xb0, C: 0xc0, DType: dtype.F16, SMs: 100}
	require.NoError(t, d.Gemm(s1, g2))
	require.Equal(t, gemmEx{transA: blasOpN, transB: blasOpN, m: 5, n: 3, k: 7, a: 0xb0, aType: cudaR16F, lda: 6,
		b: 0xa0, bType: cudaR16F, ldb: 9, c: 0xc0, cType: cudaR16F, ldc: 11, compute: blasCompute32F, algo: blasGemmDefault}, m.gemms[1])
	g2.DType = dtype.F32
	require.NoError(t, d.Gemm(s1, g2))
	require.Equal(t, cudaR32F, m.gemms[2].aType)
	g2.SMs = 500
	require.NoError(t, d.Gemm(s2, g2))
	require.NoError(t, d.Gemm(s2, g2))
	require.Equal(t, []uintptr{0x5001, 0x5002}, m.streams)
	require.Equal(t, []int{100, 0}, m.smTargets)
	require.Equal(t, 1, m.handles, "one handle per device")

	info, err := d.BLAS()
	require.NoError(t, err)
	require.Equal(t, BLASInfo{Path: "/mock/libcublas.so.13", Version: "13.0.0", SMCountTarget: true}, info)

	// Released, then used again: a fresh handle with its math mode.
	require.NoError(t, d.ReleaseBLAS())
	require.NoError(t, d.ReleaseBLAS(), "a second release is a no-op")
	require.NoError(t, d.Gemm(s1, g))
	require.Equal(t, 2, m.handles)
	require.Len(t, m.mathModes, 2)
	require.Contains(t, m.calls, "destroy")
}

func TestGemmWithoutSMTarget(t *testing.T) {
	m := &mockBLAS{noSMTarget: true}
	withMockBLAS(t, m)
	d, s1, _ := mockDevice()
	require.NoError(t, d.Gemm(s1, device.GemmSpec{M: 1, N: 1, K: 1, A: 1, B: 2, C: 3, DType: dtype.BF16, SMs: 16}))
	require.Empty(t, m.smTargets, "a cuBLAS without cublasSetSmCountTarget is not asked")
	info, err := d.BLAS()
	require.NoError(t, err)
	require.False(t, info.SMCountTarget)
}

func TestGemmErrors(t *testing.T) {
	m := &mockBLAS{}
	withMockBLAS(t, m)
	d, s1, _ := mockDevice()
	ok := device.GemmSpec{M: 4, N: 4, K: 4, A: 0x10, B: 0x20, C: 0x30, DType: dtype.BF16}

	bad := ok
	bad.LDA = 2
	require.ErrorIs(t, d.Gemm(s1, bad), device.ErrInvalidArgument)
	bad = ok
	bad.DType = dtype.I32
	require.ErrorIs(t, d.Gemm(s1, bad), device.ErrNotSupported)
	require.Empty(t, m.calls, "bad arguments never reach cuBLAS")

	m.gemmStatus = blasInvalidValue
	err := d.Gemm(s1, ok)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	var be *BLASError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "CUBLAS_STATUS_INVALID_VALUE", be.Name)
	require.Contains(t, err.Error(), "cublasGemmEx(row-major 4x4x4 bf16")
	require.Contains(t, err.Error(), "an invalid numeric value")

	m.gemmStatus = blasNotSupported
	require.ErrorIs(t, d.Gemm(s1, ok), device.ErrNotSupported)
	m.gemmStatus = 99
	require.ErrorContains(t, d.Gemm(s1, ok), "cublasStatus_t(99)")

	m.gemmStatus, m.ctxErr = blasSuccess, cudaErrorInvalidHandle
	err = d.Gemm(s1, ok)
	require.ErrorContains(t, err, "making the context current")
	require.ErrorIs(t, err, device.ErrInvalidArgument, "the CUresult's own mapping")

	other, _, _ := mockDevice()
	foreign := &stream{dev: other, h: 9, name: "other"}
	require.ErrorIs(t, d.Gemm(foreign, ok), device.ErrInvalidArgument)
	d.closed.Store(true)
	require.ErrorIs(t, d.Gemm(s1, ok), device.ErrClosed)
}

func TestBLASCandidates(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libcublas.so.13", "libcublasLt.so.13", "libcublas.so.12"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	t.Setenv(EnvCUBLAS, filepath.Join(dir, "libcublas.so.13"))
	require.Equal(t, []blasCandidate{{lib: filepath.Join(dir, "libcublas.so.13"), lt: filepath.Join(dir, "libcublasLt.so.13")}}, blasCandidates())
	t.Setenv(EnvCUBLAS, filepath.Join(dir, "libcublas.so.12"))
	require.Equal(t, []blasCandidate{{lib: filepath.Join(dir, "libcublas.so.12")}}, blasCandidates(), "no libcublasLt.so.12 beside it")

	t.Setenv(EnvCUBLAS, "")
	t.Setenv("CUDA_HOME", filepath.Dir(dir))
	require.NoError(t, os.Rename(dir, filepath.Join(filepath.Dir(dir), "lib64")))
	lib64 := filepath.Join(filepath.Dir(dir), "lib64")
	c := blasCandidates()
	require.Equal(t, blasCandidate{lib: "libcublas.so.13"}, c[0])
	require.Equal(t, blasCandidate{lib: "libcublas.so.12"}, c[1])
	require.Equal(t, blasCandidate{lib: filepath.Join(lib64, "libcublas.so.13"), lt: filepath.Join(lib64, "libcublasLt.so.13")}, c[2])
	require.Equal(t, blasCandidate{lib: filepath.Join(lib64, "libcublas.so.12")}, c[3])

	sp := t.TempDir()
	t.Setenv("PYTHONPATH", sp)
	require.Contains(t, dl.SitePackages(), sp)
}

func TestOpenBLASWithoutLibrary(t *testing.T) {
	_, err := openBLASFrom(nil, []blasCandidate{{lib: "/nonexistent/libcublas.so.13"}})
	require.ErrorIs(t, err, device.ErrNotSupported)
	_, err = openBLASFrom(nil, nil)
	require.ErrorIs(t, err, device.ErrNotSupported)
}
