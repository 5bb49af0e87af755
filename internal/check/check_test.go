package check_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
)

func newRNG(t *testing.T) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

var floats = []dtype.DType{dtype.BF16, dtype.F16, dtype.F32}

func TestRandomFloatsAreInRangeAndRepresentable(t *testing.T) {
	rng := newRNG(t)
	const n = 4096
	for _, dt := range floats {
		t.Run(dt.String(), func(t *testing.T) {
			b := check.Random(rng, dt, n)
			require.Len(t, b, n*dt.Size())
			lo, hi, negative := math.Inf(1), math.Inf(-1), 0
			distinct := map[float64]bool{}
			again := make([]byte, dt.Size())
			for i := range n {
				v := dt.Get(b, i)
				require.False(t, math.IsNaN(v), "element %d", i)
				require.LessOrEqual(t, math.Abs(v), 1.0, "element %d", i)
				// Already rounded to dt: writing it back changes nothing.
				dt.Put(again, 0, v)
				require.Equal(t, b[i*dt.Size():(i+1)*dt.Size()], again, "element %d (%g) is not a %v value", i, v, dt)
				lo, hi = min(lo, v), max(hi, v)
				if v < 0 {
					negative++
				}
				distinct[v] = true
			}
			require.Less(t, lo, -0.9)
			require.Greater(t, hi, 0.9)
			require.InDelta(t, n/2, negative, n/10, "signs are not balanced")
			require.Greater(t, len(distinct), n/4)
		})
	}
}

func TestRandomInt32CoversItsRange(t *testing.T) {
	rng := newRNG(t)
	const n = 4096
	b := check.Random(rng, dtype.I32, n)
	require.Len(t, b, 4*n)
	var big, negative, odd int
	for i := range n {
		v := int32(binary.LittleEndian.Uint32(b[4*i:]))
		if v > 1<<30 || v < -(1<<30) {
			big++
		}
		if v < 0 {
			negative++
		}
		if v&1 != 0 {
			odd++
		}
	}
	require.InDelta(t, n/2, big, n/10, "values do not span the whole range")
	require.InDelta(t, n/2, negative, n/10)
	require.InDelta(t, n/2, odd, n/10)
}

func TestRandomIsFreshAndReproducible(t *testing.T) {
	seed := rand.Uint64()
	for _, dt := range dtype.All {
		a := check.Random(rand.New(rand.NewPCG(seed, 1)), dt, 64)
		b := check.Random(rand.New(rand.NewPCG(seed, 1)), dt, 64)
		c := check.Random(rand.New(rand.NewPCG(seed, 2)), dt, 64)
		require.Equal(t, a, b, "%v: same generator state, different data", dt)
		require.NotEqual(t, a, c, "%v: different generators, same data", dt)
	}
	require.Empty(t, check.Random(rand.New(rand.NewPCG(seed, 1)), dtype.F32, 0))
}

func TestPoison(t *testing.T) {
	for _, dt := range floats {
		p := check.Poison(dt, 5)
		require.Len(t, p, 5*dt.Size())
		for i := range 5 {
			require.True(t, math.IsNaN(dt.Get(p, i)), "%v element %d", dt, i)
		}
	}
	p := check.Poison(dtype.I32, 3)
	for i := range 3 {
		require.Equal(t, uint32(0xdeadbeef), binary.LittleEndian.Uint32(p[4*i:]))
	}
}

// rankSlice is element i of rank's rows in a [ranks*rowsPer, cols] input.
func rankSlice(rank, rowsPer, cols, i int) int { return rank*rowsPer*cols + i }

func TestReduceScatterExpected(t *testing.T) {
	rng := newRNG(t)
	const ranks, rowsPer, cols = 3, 2, 5
	n := rowsPer * cols
	for _, dt := range dtype.All {
		inputs := make([][]byte, ranks)
		for r := range inputs {
			inputs[r] = check.Random(rng, dt, ranks*n)
		}
		for rank := range ranks {
			e := check.ReduceScatter(dt, inputs, rank, rowsPer, cols)
			require.Equal(t, dt, e.DType)
			require.Equal(t, ranks, e.Terms)
			if dt == dtype.I32 {
				require.Len(t, e.Int, n)
				require.Nil(t, e.Float)
				for i := range n {
					var sum int64
					for _, in := range inputs {
						sum += int64(int32(binary.LittleEndian.Uint32(in[4*rankSlice(rank, rowsPer, cols, i):])))
					}
					require.Equal(t, uint32(sum), e.Int[i], "rank %d element %d", rank, i)
				}
				continue
			}
			require.Len(t, e.Float, n)
			require.Len(t, e.AbsSum, n)
			for i := range n {
				var sum, abs float64
				for _, in := range inputs {
					x := dt.Get(in, rankSlice(rank, rowsPer, cols, i))
					sum += x
					abs += math.Abs(x)
				}
				require.Equal(t, sum, e.Float[i], "%v rank %d element %d", dt, rank, i)
				require.Equal(t, abs, e.AbsSum[i])
			}
		}
	}
}

// fp32Reduced is what a correct kernel returns for rank: each element summed
// from 0 over the inputs in order with fp32 partial sums, rounded once to dt.
// int32 wraps.
func fp32Reduced(dt dtype.DType, inputs [][]byte, rank, rowsPer, cols int) []byte {
	n := rowsPer * cols
	out := make([]byte, n*dt.Size())
	for i := range n {
		j := rankSlice(rank, rowsPer, cols, i)
		if dt == dtype.I32 {
			var acc uint32
			for _, in := range inputs {
				acc += binary.LittleEndian.Uint32(in[4*j:])
			}
			binary.LittleEndian.PutUint32(out[4*i:], acc)
			continue
		}
		var acc float32
		for _, in := range inputs {
			acc = float32(float64(acc) + dt.Get(in, j)) // one fp32 rounding per addition
		}
		switch dt {
		case dtype.BF16:
			binary.LittleEndian.PutUint16(out[2*i:], dtype.F32ToBF16(acc))
		case dtype.F16:
			binary.LittleEndian.PutUint16(out[2*i:], dtype.F32ToF16(acc))
		case dtype.F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(acc))
		}
	}
	return out
}

func TestCompareAcceptsTheFP32AccumulatedResult(t *testing.T) {
	rng := newRNG(t)
	const rowsPer, cols = 16, 64
	for _, dt := range dtype.All {
		for _, ranks := range []int{1, 2, 8, 32} {
			t.Run(fmt.Sprintf("%v/%d", dt, ranks), func(t *testing.T) {
				inputs := make([][]byte, ranks)
				for r := range inputs {
					inputs[r] = check.Random(rng, dt, ranks*rowsPer*cols)
				}
				rank := rng.IntN(ranks)
				rep := check.ReduceScatter(dt, inputs, rank, rowsPer, cols).Compare(fp32Reduced(dt, inputs, rank, rowsPer, cols), 1)
				require.True(t, rep.OK(), "%v", rep)
				require.Equal(t, rowsPer*cols, rep.Elements)
				require.Zero(t, rep.Mismatches)
				require.Empty(t, rep.First)
				require.Contains(t, rep.String(), fmt.Sprintf("%d elements match", rowsPer*cols))
				if dt == dtype.I32 {
					require.Zero(t, rep.MaxAbsErr)
				}
			})
		}
	}
}

func TestCompareCatchesOneULPInInt32(t *testing.T) {
	rng := newRNG(t)
	const ranks, rowsPer, cols = 4, 3, 7
	inputs := make([][]byte, ranks)
	for r := range inputs {
		inputs[r] = check.Random(rng, dtype.I32, ranks*rowsPer*cols)
	}
	e := check.ReduceScatter(dtype.I32, inputs, 2, rowsPer, cols)
	for _, delta := range []int32{1, -1} {
		got := fp32Reduced(dtype.I32, inputs, 2, rowsPer, cols)
		i := rng.IntN(rowsPer * cols)
		binary.LittleEndian.PutUint32(got[4*i:], binary.LittleEndian.Uint32(got[4*i:])+uint32(delta))
		rep := e.Compare(got, 1)
		require.False(t, rep.OK())
		require.Equal(t, 1, rep.Mismatches)
		require.Contains(t, rep.First, fmt.Sprintf("element %d:", i))
		require.Contains(t, rep.String(), "1 of 21 elements mismatch")
	}
}

func TestCompareCatchesPoisonNaNAndInf(t *testing.T) {
	rng := newRNG(t)
	const ranks, rowsPer, cols = 2, 4, 8
	n := rowsPer * cols
	for _, dt := range dtype.All {
		t.Run(dt.String(), func(t *testing.T) {
			inputs := make([][]byte, ranks)
			for r := range inputs {
				inputs[r] = check.Random(rng, dt, ranks*n)
			}
			e := check.ReduceScatter(dt, inputs, 1, rowsPer, cols)

			rep := e.Compare(check.Poison(dt, n), 1)
			require.Equal(t, n, rep.Mismatches, "an untouched (poisoned) output must fail everywhere")
			require.Contains(t, rep.First, "element 0:")

			if !dt.IsFloat() {
				return
			}
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				got := fp32Reduced(dt, inputs, 1, rowsPer, cols)
				i := rng.IntN(n)
				dt.Put(got, i, bad)
				rep := e.Compare(got, 1)
				require.Equal(t, 1, rep.Mismatches, "%g at %d", bad, i)
				require.Contains(t, rep.First, fmt.Sprintf("element %d:", i))
			}
			// A NaN whose pattern is not the poison's is caught too.
			got := fp32Reduced(dt, inputs, 1, rowsPer, cols)
			copy(got, check.Poison(dt, 1))
			got[0] ^= 0x02
			require.True(t, math.IsNaN(dt.Get(got, 0)))
			require.Equal(t, 1, e.Compare(got, 1).Mismatches)
		})
	}
}

// TestCompareTolerance holds Compare to its documented bound,
//
//	|got - sum| <= (rounds*u + terms*2^-24) * sum|x_i| + 2^-24,
//
// with exact inputs whose sum is exact, so the error is the one put in.
func TestCompareTolerance(t *testing.T) {
	const f32 = 1.0 / (1 << 24)
	cases := []struct {
		name   string
		dt     dtype.DType
		in     []float64 // one element per rank
		rounds int
		err    float64 // added to the exact sum
		ok     bool
	}{
		// sum 64, sum|x| 256: one bf16 rounding may cost 1, two may cost 2.
		{"bf16 within one rounding", dtype.BF16, []float64{160, -96}, 1, 1, true},
		{"bf16 beyond one rounding", dtype.BF16, []float64{160, -96}, 1, 1.5, false},
		{"bf16 within two roundings", dtype.BF16, []float64{160, -96}, 2, 1.5, true},
		{"bf16 beyond two roundings", dtype.BF16, []float64{160, -96}, 2, 2.5, false},
		{"bf16 error below", dtype.BF16, []float64{160, -96}, 1, -1.5, false},
		// sum 3, sum|x| 7: the fp16 bound is 7*2^-11 + 3*7*2^-24 + 2^-24 (about 1.75 ulps of 3).
		{"fp16 one ulp", dtype.F16, []float64{1, 4, -2}, 1, 1.0 / 512, true},
		{"fp16 two ulps", dtype.F16, []float64{1, 4, -2}, 1, 2.0 / 512, false},
		// fp32: sum 1, sum|x| 1, 1 term: the bound is (2^-24 + 2^-24) + 2^-24.
		{"fp32 one ulp", dtype.F32, []float64{1}, 1, 2 * f32, true},
		{"fp32 two ulps", dtype.F32, []float64{1}, 1, 4 * f32, false},
		// sum 0, sum|x| 1, 2 terms: the bound is 2^-24 + 2*2^-24 + 2^-24.
		{"fp32 cancellation within", dtype.F32, []float64{0.5, -0.5}, 1, 4 * f32, true},
		{"fp32 cancellation beyond", dtype.F32, []float64{0.5, -0.5}, 1, 5 * f32, false},
		// All zero: only the absolute 2^-24 is allowed.
		{"fp32 zeros within", dtype.F32, []float64{0, 0}, 1, f32, true},
		{"fp32 zeros beyond", dtype.F32, []float64{0, 0}, 1, 2 * f32, false},
		{"bf16 zeros beyond", dtype.BF16, []float64{0, 0, 0}, 3, 2 * f32, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inputs := make([][]byte, len(c.in))
			var sum float64
			for r, v := range c.in {
				inputs[r] = make([]byte, c.dt.Size())
				c.dt.Put(inputs[r], 0, v)
				require.Equal(t, v, c.dt.Get(inputs[r], 0))
				sum += v
			}
			got := make([]byte, c.dt.Size())
			c.dt.Put(got, 0, sum+c.err)
			require.Equal(t, sum+c.err, c.dt.Get(got, 0), "the test's output is not exact in %v", c.dt)
			rep := check.ReduceScatter(c.dt, inputs, 0, 1, 1).Compare(got, c.rounds)
			require.Equal(t, c.ok, rep.OK(), "%v", rep)
			require.Equal(t, math.Abs(c.err), rep.MaxAbsErr)
			var abs float64
			for _, v := range c.in {
				abs += math.Abs(v)
			}
			tol := (float64(c.rounds)*c.dt.UnitRoundoff()+float64(len(c.in))*f32)*abs + f32
			require.Equal(t, c.ok, math.Abs(c.err) <= tol, "the case contradicts the documented bound %g", tol)
			require.InEpsilon(t, math.Abs(c.err)/tol, rep.BoundUse, 1e-12)
		})
	}
}
