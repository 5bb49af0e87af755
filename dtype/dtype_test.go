package dtype_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/dtype"
)

// format describes a 16-bit float format for the independent references
// below, which work on float64 values and share nothing with package dtype.
type format struct {
	name      string
	mantBits  int // explicit fraction bits
	expBits   int
	toF32     func(uint16) float32
	fromF32   func(float32) uint16
	maxFinite float64
}

func (f format) bias() int   { return 1<<(f.expBits-1) - 1 }
func (f format) minExp() int { return 1 - f.bias() } // exponent of the smallest normal

var (
	f16  = format{"fp16", 10, 5, dtype.F16ToF32, dtype.F32ToF16, 65504}
	bf16 = format{"bf16", 7, 8, dtype.BF16ToF32, dtype.F32ToBF16, (2 - 1.0/128) * math.Ldexp(1, 127)}
)

// value decodes a bit pattern from the IEEE definition.
func (f format) value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>f.mantBits) & (1<<f.expBits - 1)
	mant := float64(int(h) & (1<<f.mantBits - 1))
	switch exp {
	case 1<<f.expBits - 1:
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0: // zero and subnormals
		return sign * math.Ldexp(mant, f.minExp()-f.mantBits)
	}
	return sign * math.Ldexp(float64(int(1)<<f.mantBits)+mant, exp-f.bias()-f.mantBits)
}

func (f format) isNaN(h uint16) bool { return math.IsNaN(f.value(h)) }

// round is the format's value nearest x, ties to even, or ±Inf where the
// rounded magnitude exceeds the largest finite value. x is a float32, so
// every step here is exact in float64.
func (f format) round(x float64) float64 {
	a := math.Abs(x)
	if a == 0 || math.IsInf(a, 0) {
		return x
	}
	_, e := math.Frexp(a) // a = frac * 2^e, frac in [0.5, 1)
	q := max(e-1, f.minExp()) - f.mantBits
	r := math.Ldexp(math.RoundToEven(math.Ldexp(a, -q)), q)
	if r > f.maxFinite {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// encoder maps every non-NaN value of the format to its bit pattern.
func (f format) encoder() map[float64]uint16 {
	m := make(map[float64]uint16, 1<<16)
	for h := 0; h < 1<<16; h++ {
		if v := f.value(uint16(h)); !math.IsNaN(v) && v != 0 {
			m[v] = uint16(h)
		}
	}
	return m
}

// want is the reference conversion of x to the format's bits.
func (f format) want(enc map[float64]uint16, x float32) uint16 {
	r := f.round(float64(x))
	if r == 0 {
		if math.Signbit(r) {
			return 0x8000
		}
		return 0
	}
	h, ok := enc[r]
	if !ok {
		panic(fmt.Sprintf("%s: %g rounds to %g, which is not a %s value", f.name, x, r, f.name))
	}
	return h
}

var formats = []format{f16, bf16}

// TestWidenMatchesTheIEEEDefinition checks every one of the 65536 patterns.
func TestWidenMatchesTheIEEEDefinition(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			for h := 0; h < 1<<16; h++ {
				got, want := f.toF32(uint16(h)), f.value(uint16(h))
				if math.IsNaN(want) {
					if !math.IsNaN(float64(got)) {
						require.Failf(t, "wrong value", "%#04x widens to %g, want NaN", h, got)
					}
					continue
				}
				if float64(got) != want || math.Signbit(want) != math.Signbit(float64(got)) {
					require.Failf(t, "wrong value", "%#04x widens to %g, want %g", h, got, want)
				}
			}
		})
	}
}

// TestNarrowRoundTripsEveryPattern: widening then narrowing gives back the
// same bits for every non-NaN pattern, and NaN stays NaN.
func TestNarrowRoundTripsEveryPattern(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			nans := 0
			for h := 0; h < 1<<16; h++ {
				back := f.fromF32(f.toF32(uint16(h)))
				if f.isNaN(uint16(h)) {
					nans++
					if !f.isNaN(back) {
						require.Failf(t, "NaN lost", "NaN %#04x narrows to %#04x", h, back)
					}
					continue
				}
				if back != uint16(h) {
					require.Failf(t, "no round trip", "%#04x (%g) comes back as %#04x", h, f.toF32(uint16(h)), back)
				}
			}
			require.Equal(t, 2*(1<<f.mantBits-1), nans)
		})
	}
}

// TestNarrowRoundsToNearestEven compares against the reference at every
// value of the format, every midpoint between neighbours (the ties) and one
// float32 step either side of each midpoint, for both signs, plus random
// float32 patterns.
func TestNarrowRoundsToNearestEven(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			enc := f.encoder()
			check := func(x float32) {
				if math.IsNaN(float64(x)) {
					return
				}
				got, want := f.fromF32(x), f.want(enc, x)
				if got != want {
					require.Failf(t, "wrong rounding", "%g (float32 %#08x) narrows to %#04x, want %#04x",
						x, math.Float32bits(x), got, want)
				}
			}
			for h := 0; h < 0x7fff; h++ { // every positive pattern with a finite successor
				lo, hi := f.value(uint16(h)), f.value(uint16(h+1))
				if math.IsNaN(lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
					continue
				}
				mid := float32((lo + hi) / 2) // exact: needs one more bit than the format
				if float64(mid) != (lo+hi)/2 {
					require.Failf(t, "inexact midpoint", "between %#04x and its successor", h)
				}
				for _, x := range []float32{float32(lo), mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
					check(x)
					check(-x)
				}
			}
			// Past the largest finite value: the tie just above it and beyond.
			top := f.maxFinite + math.Ldexp(1, int(math.Floor(math.Log2(f.maxFinite)))-f.mantBits-1)
			require.Equal(t, top, float64(float32(top)))
			for _, x := range []float32{float32(top), math.Nextafter32(float32(top), 0), math.MaxFloat32, float32(math.Inf(1))} {
				check(x)
				check(-x)
			}
			seed := rand.Uint64()
			rng := rand.New(rand.NewPCG(seed, 1))
			for range 100000 {
				x := math.Float32frombits(rng.Uint32())
				got, want := f.fromF32(x), uint16(0)
				if !math.IsNaN(float64(x)) {
					want = f.want(enc, x)
				}
				if !math.IsNaN(float64(x)) && got != want {
					require.Failf(t, "wrong rounding", "seed %d: %g (float32 %#08x) narrows to %#04x, want %#04x",
						seed, x, math.Float32bits(x), got, want)
				}
			}
		})
	}
}

func TestNarrowCases(t *testing.T) {
	p := func(e int) float64 { return math.Ldexp(1, e) }
	cases := []struct {
		name string
		f    format
		x    float32
		want uint16
	}{
		{"one", f16, 1, 0x3c00},
		{"tie rounds down to even", f16, float32(1 + p(-11)), 0x3c00},
		{"tie rounds up to even", f16, float32(1 + 3*p(-11)), 0x3c02},
		{"just above a tie", f16, float32(1+p(-11)) + float32(p(-23)), 0x3c01},
		{"largest finite", f16, 65504, 0x7bff},
		{"rounds down to the largest finite", f16, 65519.99, 0x7bff},
		{"overflow at the tie above the largest finite", f16, 65520, 0x7c00},
		{"overflow", f16, 1e6, 0x7c00},
		{"negative overflow", f16, -1e6, 0xfc00},
		{"infinity", f16, float32(math.Inf(1)), 0x7c00},
		{"negative infinity", f16, float32(math.Inf(-1)), 0xfc00},
		{"smallest normal", f16, float32(p(-14)), 0x0400},
		{"largest subnormal", f16, float32(p(-14) - p(-24)), 0x03ff},
		{"tie between subnormal and normal", f16, float32(p(-14) - p(-25)), 0x0400},
		{"smallest subnormal", f16, float32(p(-24)), 0x0001},
		{"half the smallest subnormal ties to zero", f16, float32(p(-25)), 0x0000},
		{"just above half the smallest subnormal", f16, float32(p(-25) * (1 + p(-20))), 0x0001},
		{"subnormal tie rounds up to even", f16, float32(3 * p(-25)), 0x0002},
		{"negative subnormal", f16, float32(-5 * p(-24)), 0x8005},
		{"underflow to zero", f16, float32(p(-30)), 0x0000},
		{"negative underflow keeps the sign", f16, float32(-p(-30)), 0x8000},
		{"negative zero", f16, float32(math.Copysign(0, -1)), 0x8000},
		{"float32 subnormal", f16, math.Float32frombits(1), 0x0000},

		{"one", bf16, 1, 0x3f80},
		{"tie rounds down to even", bf16, float32(1 + p(-8)), 0x3f80},
		{"tie rounds up to even", bf16, float32(1 + 3*p(-8)), 0x3f82},
		{"just above a tie", bf16, math.Float32frombits(0x3f808001), 0x3f81},
		{"largest finite", bf16, math.Float32frombits(0x7f7f7fff), 0x7f7f},
		{"overflow at the tie above the largest finite", bf16, math.Float32frombits(0x7f7f8000), 0x7f80},
		{"largest float32 overflows", bf16, math.MaxFloat32, 0x7f80},
		{"negative overflow", bf16, -math.MaxFloat32, 0xff80},
		{"infinity", bf16, float32(math.Inf(1)), 0x7f80},
		{"subnormal tie rounds down to even", bf16, math.Float32frombits(0x00008000), 0x0000},
		{"subnormal tie rounds up to even", bf16, math.Float32frombits(0x00018000), 0x0002},
		{"subnormal above a tie", bf16, math.Float32frombits(0x00008001), 0x0001},
		{"negative zero", bf16, float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, c := range cases {
		t.Run(c.f.name+"/"+c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.f.fromF32(c.x), "%g (%#08x)", c.x, math.Float32bits(c.x))
		})
	}
}

func TestNaNStaysNaN(t *testing.T) {
	nans := []uint32{
		0x7fc00000, 0xffc00000, // quiet
		0x7f800001, 0xff800001, // signalling, payload only in the low bits
		0x7fa00000, 0x7fffffff, 0x7f802000, 0x7f800100,
	}
	for _, f := range formats {
		for _, u := range nans {
			x := math.Float32frombits(u)
			h := f.fromF32(x)
			require.True(t, f.isNaN(h), "%s: NaN %#08x narrows to %#04x", f.name, u, h)
			require.Equal(t, u>>31 == 1, h>>15 == 1, "%s: sign of NaN %#08x", f.name, u)
			require.True(t, math.IsNaN(float64(f.toF32(h))))
		}
	}
}

func TestParseAndString(t *testing.T) {
	for _, dt := range dtype.All {
		got, err := dtype.Parse(dt.String())
		require.NoError(t, err)
		require.Equal(t, dt, got)
	}
	names := map[dtype.DType]string{dtype.BF16: "bf16", dtype.F16: "fp16", dtype.F32: "fp32", dtype.I32: "int32"}
	for dt, name := range names {
		require.Equal(t, name, dt.String())
	}
	require.Len(t, dtype.All, len(names))
	aliases := []struct {
		in   string
		want dtype.DType
	}{
		{"bfloat16", dtype.BF16}, {"BF16", dtype.BF16}, {" bf16\n", dtype.BF16},
		{"f16", dtype.F16}, {"float16", dtype.F16}, {"half", dtype.F16}, {"Half", dtype.F16},
		{"f32", dtype.F32}, {"float32", dtype.F32}, {"float", dtype.F32}, {"FP32", dtype.F32},
		{"i32", dtype.I32}, {"int", dtype.I32}, {"Int32", dtype.I32},
	}
	for _, c := range aliases {
		got, err := dtype.Parse(c.in)
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
	for _, alias := range []string{"e4m3", "fp8", "float8_e4m3fn", "E4M3"} {
		got, err := dtype.Parse(alias)
		require.NoError(t, err, "%q", alias)
		require.Equal(t, dtype.E4M3, got, "%q", alias)
	}
	require.Equal(t, "e4m3", dtype.E4M3.String())
	for _, bad := range []string{"", "fp64", "double", "int64", "bf 16", "fp8e5m2", "dtype(1)"} {
		got, err := dtype.Parse(bad)
		require.Error(t, err, "%q", bad)
		require.ErrorContains(t, err, fmt.Sprintf("%q", bad))
		require.Equal(t, dtype.Invalid, got)
	}
	require.Equal(t, "dtype(0)", dtype.Invalid.String())
	require.Equal(t, "dtype(42)", dtype.DType(42).String())
}

func TestProperties(t *testing.T) {
	cases := []struct {
		dt      dtype.DType
		size    int
		valid   bool
		isFloat bool
		u       float64
	}{
		{dtype.BF16, 2, true, true, math.Ldexp(1, -8)},
		{dtype.F16, 2, true, true, math.Ldexp(1, -11)},
		{dtype.F32, 4, true, true, math.Ldexp(1, -24)},
		{dtype.I32, 4, true, false, 0},
		{dtype.E4M3, 1, false, true, math.Ldexp(1, -4)}, // a GEMM input, not a reduce's type
		{dtype.Invalid, 0, false, false, 0},
		{dtype.DType(17), 0, false, false, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.size, c.dt.Size(), "%v", c.dt)
		require.Equal(t, c.valid, c.dt.Valid(), "%v", c.dt)
		require.Equal(t, c.isFloat, c.dt.IsFloat(), "%v", c.dt)
		require.Equal(t, c.u, c.dt.UnitRoundoff(), "%v", c.dt)
	}
	// The unit roundoff bounds the relative error of one rounding.
	rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		b := make([]byte, dt.Size())
		for range 10000 {
			v := float64(float32((1 + rng.Float64()*999) * float64(1-2*rng.IntN(2))))
			dt.Put(b, 0, v)
			require.LessOrEqual(t, math.Abs(dt.Get(b, 0)-v), dt.UnitRoundoff()*math.Abs(v), "%v %g", dt, v)
		}
	}
}

func TestGetPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
	for _, dt := range dtype.All {
		t.Run(dt.String(), func(t *testing.T) {
			const n = 257
			b := make([]byte, n*dt.Size()+3) // slack: Put must write only its element
			want := make([]float64, n)
			for i := range want {
				v := rng.NormFloat64() * 100
				if dt == dtype.I32 {
					v = math.Trunc(v * 1e6)
				}
				want[i] = v
				dt.Put(b, i, v)
			}
			require.Equal(t, []byte{0, 0, 0}, b[n*dt.Size():])
			for i, v := range want {
				got := dt.Get(b, i)
				switch dt {
				case dtype.I32:
					require.Equal(t, v, got, "element %d", i)
				case dtype.F32:
					require.Equal(t, float64(float32(v)), got, "element %d", i)
				default: // within one rounding (plus half the smallest fp16 subnormal)
					require.LessOrEqual(t, math.Abs(got-v), dt.UnitRoundoff()*math.Abs(v)*(1+1e-6)+math.Ldexp(1, -25),
						"element %d: %g for %g", i, got, v)
				}
			}
		})
	}

	// int32 is little-endian two's complement and truncates toward zero.
	b := make([]byte, 8)
	dtype.I32.Put(b, 0, -1)
	dtype.I32.Put(b, 1, -3.7)
	require.Equal(t, []byte{0xff, 0xff, 0xff, 0xff, 0xfd, 0xff, 0xff, 0xff}, b)
	require.Equal(t, -3.0, dtype.I32.Get(b, 1))
	dtype.I32.Put(b, 0, math.MaxInt32)
	require.Equal(t, float64(math.MaxInt32), dtype.I32.Get(b, 0))
	dtype.BF16.Put(b, 2, 1)
	require.Equal(t, []byte{0x80, 0x3f}, b[4:6])
	dtype.F16.Put(b, 3, -2)
	require.Equal(t, []byte{0x00, 0xc0}, b[6:8])

	require.Panics(t, func() { dtype.Invalid.Get(b, 0) })
	require.Panics(t, func() { dtype.Invalid.Put(b, 0, 1) })
}

func TestPutRoundsOnceFromFloat64(t *testing.T) {
	t.Skip("BUG: DType.Put rounds float64 -> float32 -> bf16/fp16 (two roundings), so values just above " +
		"a 16-bit tie round down: Put(1+2^-8+2^-30) stores bf16 1.0, not the nearest 1+2^-7")
	b := make([]byte, 2)
	dtype.BF16.Put(b, 0, 1+math.Ldexp(1, -8)+math.Ldexp(1, -30))
	require.Equal(t, 1+math.Ldexp(1, -7), dtype.BF16.Get(b, 0))
	dtype.F16.Put(b, 0, 1+math.Ldexp(1, -11)+math.Ldexp(1, -30))
	require.Equal(t, 1+math.Ldexp(1, -10), dtype.F16.Get(b, 0))
}

// e4m3Values are the finite e4m3 values by code 0..126, from the format's
// definition (bias 7, 3 mantissa bits, subnormals below 2^-6).
func e4m3Values() []float64 {
	var vs []float64
	for c := 0; c < 0x7f; c++ {
		e, m := c>>3, float64(c&7)
		if e == 0 {
			vs = append(vs, m/8*math.Pow(2, -6))
		} else {
			vs = append(vs, (1+m/8)*math.Pow(2, float64(e-7)))
		}
	}
	return vs
}

func TestE4M3EveryPattern(t *testing.T) {
	vs := e4m3Values()
	require.Equal(t, 448.0, vs[0x7e])
	require.Equal(t, math.Pow(2, -9), vs[1])
	for c, v := range vs {
		for _, sign := range []float64{1, -1} {
			code := byte(c)
			if sign < 0 {
				code |= 0x80
			}
			require.Equal(t, sign*v, dtype.E4M3ToF64(code), "code %#02x", code)
			if v != 0 {
				require.Equal(t, code, dtype.F64ToE4M3(sign*v), "%g", sign*v)
			}
		}
	}
	require.True(t, math.IsNaN(dtype.E4M3ToF64(0x7f)))
	require.True(t, math.IsNaN(dtype.E4M3ToF64(0xff)))
	require.Equal(t, byte(0x7f), dtype.F64ToE4M3(math.NaN()))
}

func TestE4M3RoundsToNearestEvenAndSaturates(t *testing.T) {
	vs := e4m3Values()
	for c := 0; c+1 < len(vs); c++ {
		lo, hi := vs[c], vs[c+1]
		mid := (lo + hi) / 2
		even := byte(c)
		if c%2 == 1 {
			even = byte(c + 1)
		}
		require.Equal(t, even, dtype.F64ToE4M3(mid), "tie between %g and %g", lo, hi)
		require.Equal(t, byte(c), dtype.F64ToE4M3(math.Nextafter(mid, lo)), "just below %g", mid)
		require.Equal(t, byte(c+1), dtype.F64ToE4M3(math.Nextafter(mid, hi)), "just above %g", mid)
	}
	for _, big := range []float64{448.5, 463.9, 464, 480, 1e6, math.Inf(1)} {
		require.Equal(t, byte(0x7e), dtype.F64ToE4M3(big), "%g", big)
		require.Equal(t, byte(0xfe), dtype.F64ToE4M3(-big), "%g", -big)
	}
	require.Equal(t, byte(0), dtype.F64ToE4M3(math.Pow(2, -10)), "half the least subnormal ties to zero")
	require.Equal(t, byte(0x80), dtype.F64ToE4M3(math.Copysign(0, -1)))
	b := make([]byte, 3)
	dtype.E4M3.Put(b, 1, -1.0625) // between -1 and -1.125: ties to even, -1
	require.Equal(t, []byte{0, 0xb8, 0}, b)
	require.Equal(t, -1.0, dtype.E4M3.Get(b, 1))
}
