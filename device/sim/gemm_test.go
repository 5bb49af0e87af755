package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// randomMatrix returns rows×ld elements of dt, uniform in [-1, 1) and
// rounded to dt (the padding beyond cols included).
func randomMatrix(rng *rand.Rand, dt dtype.DType, rows, ld int) []byte {
	b := make([]byte, rows*ld*dt.Size())
	for i := 0; i < rows*ld; i++ {
		dt.Put(b, i, rng.Float64()*2-1)
	}
	return b
}

// refGemm is the test's own reference, written independently of gemm.go:
// per element, an fp32 sum in k order of fp32 products of the operands as
// dtype.Get widens them, rounded once by dtype.Put. It also returns the
// exact (fp64) product and the sum of the products' magnitudes.
func refGemm(g device.GemmSpec, a, b []byte) (c []byte, exact, absSum []float64) {
	dt := g.DType
	c = make([]byte, g.M*g.N*dt.Size())
	exact = make([]float64, g.M*g.N)
	absSum = make([]float64, g.M*g.N)
	for i := 0; i < g.M; i++ {
		for j := 0; j < g.N; j++ {
			var acc float32
			for k := 0; k < g.K; k++ {
				x, y := dt.Get(a, i*g.LDA+k), dt.Get(b, k*g.LDB+j)
				acc += float32(float32(x) * float32(y))
				exact[i*g.N+j] += x * y
				absSum[i*g.N+j] += math.Abs(x * y)
			}
			dt.Put(c, i*g.N+j, float64(acc))
		}
	}
	return c, exact, absSum
}

func TestGemmMatchesReference(t *testing.T) {
	d := newDevice(t, NewHost("gemm"), 0, Options{})
	s := openStream(t, d)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		for _, shape := range []struct{ m, n, k, padA, padB, padC, sms int }{
			{1, 1, 1, 0, 0, 0, 0},
			{7, 5, 3, 0, 0, 0, 0},
			{16, 33, 64, 0, 0, 0, 0},
			{33, 17, 40, 3, 5, 2, 0},
			{64, 8, 129, 0, 1, 7, 3},
		} {
			g := device.GemmSpec{M: shape.m, N: shape.n, K: shape.k, DType: dt, SMs: shape.sms,
				LDA: shape.k + shape.padA, LDB: shape.n + shape.padB, LDC: shape.n + shape.padC}
			es := dt.Size()
			a := randomMatrix(rng, dt, g.M, g.LDA)
			b := randomMatrix(rng, dt, g.K, g.LDB)
			g.A, g.B = alloc(t, d, int64(len(a))), alloc(t, d, int64(len(b)))
			g.C = alloc(t, d, int64(g.M*g.LDC*es))
			require.NoError(t, d.CopyToDevice(g.A, a))
			require.NoError(t, d.CopyToDevice(g.B, b))
			canary := randomBytes(g.M * g.LDC * es)
			require.NoError(t, d.CopyToDevice(g.C, canary))

			require.NoError(t, d.Gemm(s, g))
			require.NoError(t, s.Synchronize(testCtx(t)))
			got := make([]byte, len(canary))
			require.NoError(t, d.CopyToHost(got, g.C))

			want, exact, absSum := refGemm(g, a, b)
			u := dt.UnitRoundoff()
			for i := 0; i < g.M; i++ {
				row := got[i*g.LDC*es:]
				require.Equal(t, want[i*g.N*es:(i+1)*g.N*es], row[:g.N*es], "%v %+v: row %d differs from fp32-in-k-order", dt, shape, i)
				require.Equal(t, canary[(i*g.LDC+g.N)*es:(i+1)*g.LDC*es], row[g.N*es:g.LDC*es], "%v: padding of row %d was written", dt, i)
				for j := 0; j < g.N; j++ {
					// One rounding to dt of an fp32 sum of K terms (products
					// exact for 16-bit types; fp32 products add one u each).
					e := i*g.N + j
					tol := (u + float64(g.K+1)/(1<<24)) * absSum[e] * (1 + u)
					require.LessOrEqual(t, math.Abs(dt.Get(row, j)-exact[e]), tol, "%v element (%d,%d)", dt, i, j)
				}
			}
		}
	}
}

func TestGemmRunsInStreamOrder(t *testing.T) {
	d := newDevice(t, NewHost("gemm-order"), 0, Options{})
	s := openStream(t, d)
	gate := alloc(t, d, 4)
	putU32(t, d, gate, 0)
	one := func(v float64) []byte { b := make([]byte, 2); dtype.BF16.Put(b, 0, v); return b }
	a, b, c := alloc(t, d, 2), alloc(t, d, 2), alloc(t, d, 2)
	require.NoError(t, d.CopyToDevice(a, one(3)))
	require.NoError(t, d.CopyToDevice(b, one(0)))
	require.NoError(t, d.CopyToDevice(c, one(-1)))
	require.NoError(t, d.WaitValue32(s, device.Word{Addr: gate, Label: "gate"}, device.GEQ, 1))
	// B is rewritten before the gate opens: the GEMM must see the new value.
	require.NoError(t, d.Gemm(s, device.GemmSpec{M: 1, N: 1, K: 1, A: a, B: b, C: c, DType: dtype.BF16}))
	ev := newEvent(t, d)
	require.NoError(t, ev.Record(s))
	require.True(t, blocked(t, ev))
	require.NoError(t, d.CopyToDevice(b, one(2)))
	require.NoError(t, d.WriteValue32(openStream(t, d), gate, 1))
	require.NoError(t, s.Synchronize(testCtx(t)))
	got := make([]byte, 2)
	require.NoError(t, d.CopyToHost(got, c))
	require.Equal(t, 6.0, dtype.BF16.Get(got, 0))
}

func TestGemmRejectsBadArguments(t *testing.T) {
	d := newDevice(t, NewHost("gemm-bad"), 0, Options{WaitTimeout: time.Second})
	s := openStream(t, d)
	p := alloc(t, d, 1024)
	q := alloc(t, d, 1024)
	r := alloc(t, d, 64)
	ok := device.GemmSpec{M: 4, N: 4, K: 4, A: p, B: q, C: r, DType: dtype.BF16}
	require.NoError(t, ok.Check())
	bad := map[string]device.GemmSpec{}
	for name, f := range map[string]func(*device.GemmSpec){
		"zero M":     func(g *device.GemmSpec) { g.M = 0 },
		"negative K": func(g *device.GemmSpec) { g.K = -1 },
		"short LDA":  func(g *device.GemmSpec) { g.LDA = 3 },
		"short LDC":  func(g *device.GemmSpec) { g.LDC = 2 },
		"nil B":      func(g *device.GemmSpec) { g.B = 0 },
		"huge N":     func(g *device.GemmSpec) { g.N = math.MaxInt32 + 1 },
		"SMs":        func(g *device.GemmSpec) { g.SMs = -1 },
	} {
		g := ok
		f(&g)
		bad[name] = g
	}
	for name, g := range bad {
		require.ErrorIs(t, d.Gemm(s, g), device.ErrInvalidArgument, name)
	}
	i32 := ok
	i32.DType = dtype.I32
	require.ErrorIs(t, d.Gemm(s, i32), device.ErrNotSupported)

	// Dense fills only the zero leading dimensions; Extent spans first to
	// last element.
	g := device.GemmSpec{M: 3, N: 5, K: 7, LDB: 9, DType: dtype.F16}.Dense()
	require.Equal(t, [3]int{7, 9, 5}, [3]int{g.LDA, g.LDB, g.LDC})
	ea, eb, ec := g.Extent()
	require.Equal(t, [3]int64{2 * 21, 2 * (6*9 + 5), 2 * 15}, [3]int64{ea, eb, ec})

	m, err := device.MatmulOf(d)
	require.NoError(t, err)
	require.Same(t, d, m.(*Device))

	// Out of bounds and overlapping operands fail the stream when it runs.
	oob := ok
	oob.M = 64 // C holds 64 bytes: 4 rows of 4 bf16 is 32; 64 rows is not
	require.NoError(t, d.Gemm(s, oob))
	err = s.Synchronize(testCtx(t))
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, "C:")

	s2 := openStream(t, d)
	alias := ok
	alias.C = p.Add(16)
	require.NoError(t, d.Gemm(s2, alias))
	err = s2.Synchronize(testCtx(t))
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, "overlaps")
}

type notMatmul struct{ device.Device }

func TestMatmulOfWithout(t *testing.T) {
	d := newDevice(t, NewHost("nomatmul"), 0, Options{})
	_, err := device.MatmulOf(notMatmul{d})
	require.True(t, errors.Is(err, device.ErrNotSupported))
	require.Contains(t, err.Error(), d.Name())
}
