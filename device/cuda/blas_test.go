package cuda_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/dtype"
)

// blasDevice opens GPU 0 and loads cuBLAS, or skips the test saying why.
// Under the fake driver without a fake cuBLAS (the child of
// TestAgainstFakeDriver, which requires that no device test skips) it
// returns nil and the caller returns: TestBLASAgainstFakeDriver runs these
// tests against a fake cuBLAS instead.
func blasDevice(t *testing.T) *cuda.Device {
	t.Helper()
	if os.Getenv("HIERCOLL_FAKE_CUDA") != "" && os.Getenv("HIERCOLL_FAKE_CUBLAS") == "" {
		t.Log("fake driver without a fake cuBLAS: TestBLASAgainstFakeDriver runs this test")
		return nil
	}
	d := openDevice(t)
	t.Cleanup(func() { assert.NoError(t, d.ReleaseBLAS()) }) // before openDevice's Close
	info, err := d.BLAS()
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no cuBLAS: %v", err)
	}
	require.NoError(t, err)
	t.Logf("cuBLAS %s at %s (SM count target: %v)", info.Version, info.Path, info.SMCountTarget)
	return d
}

// gemmCase is one product with host operands and its fp64 reference.
type gemmCase struct {
	g          device.GemmSpec
	a, b       []byte
	exact, abs []float64 // per element of C: the exact product and sum |a·b|
}

func newGemmCase(rng *rand.Rand, dt dtype.DType, m, n, k, padA, padB, padC, sms int) *gemmCase {
	c := &gemmCase{g: device.GemmSpec{M: m, N: n, K: k, LDA: k + padA, LDB: n + padB, LDC: n + padC, DType: dt, SMs: sms}}
	fill := func(count int) []byte {
		b := make([]byte, count*dt.Size())
		for i := 0; i < count; i++ {
			dt.Put(b, i, rng.Float64()*2-1)
		}
		return b
	}
	c.a, c.b = fill(m*c.g.LDA), fill(k*c.g.LDB)
	c.exact, c.abs = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for l := 0; l < k; l++ {
				p := dt.Get(c.a, i*c.g.LDA+l) * dt.Get(c.b, l*c.g.LDB+j)
				c.exact[i*n+j] += p
				c.abs[i*n+j] += math.Abs(p)
			}
		}
	}
	return c
}

// check compares C (with its row padding) against the reference: fp32
// accumulation in any order errs by at most (K-1)·u32·Σ|a·b| (doubled here:
// tensor cores may truncate inside their accumulations), then one rounding
// to the dtype (plus half an fp16 subnormal step); the padding must be
// untouched.
func (c *gemmCase) check(t *testing.T, got, canary []byte) {
	t.Helper()
	g, dt, es := c.g, c.g.DType, c.g.DType.Size()
	u, g32 := dt.UnitRoundoff(), 2*float64(g.K)/(1<<24)
	for i := 0; i < g.M; i++ {
		row := got[i*g.LDC*es:]
		require.Equal(t, canary[(i*g.LDC+g.N)*es:(i+1)*g.LDC*es], row[g.N*es:g.LDC*es], "padding of row %d written", i)
		for j := 0; j < g.N; j++ {
			e := i*g.N + j
			tol := (u*(1+g32)+g32)*c.abs[e] + 1.0/(1<<25)
			v := dt.Get(row, j)
			require.False(t, math.IsNaN(v), "%v %dx%dx%d: C[%d,%d] is NaN", dt, g.M, g.N, g.K, i, j)
			require.LessOrEqual(t, math.Abs(v-c.exact[e]), tol, "%v %dx%dx%d: C[%d,%d] = %g, exact %g", dt, g.M, g.N, g.K, i, j, v, c.exact[e])
		}
	}
}

func TestGemmCuBLAS(t *testing.T) {
	d := blasDevice(t)
	if d == nil {
		return
	}
	streams := []device.Stream{newStream(t, d, device.Normal), newStream(t, d, device.High)}
	rng := rand.New(rand.NewPCG(7, 9))
	smsAll := d.Info().SMs
	n := 0
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		for _, sh := range []struct{ m, n, k, padA, padB, padC, sms int }{
			{1, 1, 1, 0, 0, 0, 0},
			{2, 3, 5, 0, 0, 0, 0},
			{17, 33, 64, 0, 0, 0, 8},
			{64, 31, 40, 3, 5, 2, 0},
			{96, 128, 257, 1, 0, 7, smsAll + 10},
		} {
			c := newGemmCase(rng, dt, sh.m, sh.n, sh.k, sh.padA, sh.padB, sh.padC, sh.sms)
			es := int64(dt.Size())
			c.g.A, c.g.B = alloc(t, d, int64(len(c.a))), alloc(t, d, int64(len(c.b)))
			c.g.C = alloc(t, d, int64(c.g.M*c.g.LDC)*es)
			require.NoError(t, d.CopyToDevice(c.g.A, c.a))
			require.NoError(t, d.CopyToDevice(c.g.B, c.b))
			canary := make([]byte, c.g.M*c.g.LDC*int(es))
			for i := range canary {
				canary[i] = byte(rng.Uint32())
			}
			require.NoError(t, d.CopyToDevice(c.g.C, canary))
			s := streams[n%len(streams)]
			n++
			require.NoError(t, d.Gemm(s, c.g))
			syncStream(t, s)
			got := make([]byte, len(canary))
			require.NoError(t, d.CopyToHost(got, c.g.C))
			c.check(t, got, canary)
		}
	}

	s := streams[0]
	bad := device.GemmSpec{M: 2, N: 2, K: 2, A: 1, B: 2, C: 3, LDA: 1, DType: dtype.BF16}
	require.ErrorIs(t, d.Gemm(s, bad), device.ErrInvalidArgument)
	bad = device.GemmSpec{M: 2, N: 2, K: 2, A: 1, B: 2, C: 3, DType: dtype.I32}
	require.ErrorIs(t, d.Gemm(s, bad), device.ErrNotSupported)
	var _ device.Matmul = d
	m, err := device.MatmulOf(d)
	require.NoError(t, err)
	require.Same(t, d, m)
}

// TestGemmOrderedOnStream needs a real GPU: the fake cuBLAS computes at call
// time and refuses streams with pending work.
func TestGemmOrderedOnStream(t *testing.T) {
	d := blasDevice(t)
	if d == nil {
		return
	}
	if os.Getenv("HIERCOLL_FAKE_CUBLAS") != "" {
		t.Skip("the fake cuBLAS runs GEMMs at call time, not in stream order")
	}
	s, releaser := newStream(t, d, device.Normal), newStream(t, d, device.Normal)
	gate := alloc(t, d, 4)
	writeWord(t, d, gate, 0)
	releaseOnCleanup(t, d, releaser, gate, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	c := newGemmCase(rng, dtype.BF16, 64, 64, 64, 0, 0, 0, 0)
	stale := newGemmCase(rng, dtype.BF16, 64, 64, 64, 0, 0, 0, 0)
	c.g.A, c.g.B, c.g.C = alloc(t, d, int64(len(c.a))), alloc(t, d, int64(len(c.b))), alloc(t, d, 64*64*2)
	require.NoError(t, d.CopyToDevice(c.g.A, stale.a))
	require.NoError(t, d.CopyToDevice(c.g.B, stale.b))
	// cuBLAS initialises a handle lazily on its first call on a stream, and
	// that initialisation waits for the stream: do it before blocking it
	// (on an H200, a first call behind the blocked wait never returned).
	require.NoError(t, d.Gemm(s, c.g))
	syncStream(t, s)
	require.NoError(t, d.WaitValue32(s, device.Word{Addr: gate, Label: "gate"}, device.GEQ, 1))
	require.NoError(t, d.Gemm(s, c.g))
	ev, err := d.NewEvent()
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, ev.Record(s))
	time.Sleep(20 * time.Millisecond)
	done, err := ev.Done()
	require.NoError(t, err)
	require.False(t, done, "the GEMM ran before the stream's earlier wait was satisfied")
	// The operands change before the gate opens: the GEMM must see these.
	require.NoError(t, d.CopyToDevice(c.g.A, c.a))
	require.NoError(t, d.CopyToDevice(c.g.B, c.b))
	require.NoError(t, d.WriteValue32(releaser, gate, 1))
	syncStream(t, s)
	got := make([]byte, 64*64*2)
	require.NoError(t, d.CopyToHost(got, c.g.C))
	c.check(t, got, got)
}
