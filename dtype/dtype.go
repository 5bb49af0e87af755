// Package dtype names the element types hiercoll reduces and converts them to
// and from float64 on the host.
//
// bf16 and fp16 are carried as their 16-bit patterns (uint16); the conversions
// here round to nearest even, as the GPU's conversion instructions do, so the
// CPU backend and the CUDA kernels produce the same bits for the same sums.
package dtype

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// DType is an element type of a reduce-scatter.
type DType int

// The element types. The zero value is invalid on purpose, so that a Config
// that forgot to set one is rejected.
const (
	Invalid DType = iota
	BF16
	F16
	F32
	I32
	// E4M3 is fp8 (1 sign, 4 exponent bits with bias 7, 3 mantissa bits;
	// no infinities, ±448 at most, NaN S.1111.111): an input of the own
	// GEMM only, never a reduce-scatter's element type (not Valid).
	E4M3
)

// All lists every valid dtype, in a stable order (for tables and tests).
var All = []DType{BF16, F16, F32, I32}

// Size is the size of one element in bytes (0 for Invalid).
func (d DType) Size() int {
	switch d {
	case BF16, F16:
		return 2
	case F32, I32:
		return 4
	case E4M3:
		return 1
	}
	return 0
}

// Valid reports whether d is one of the element types a reduce-scatter
// takes (All; not E4M3).
func (d DType) Valid() bool { return d >= BF16 && d <= I32 }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == BF16 || d == F16 || d == F32 || d == E4M3 }

// String is the short name used on the command line and in kernel names.
func (d DType) String() string {
	switch d {
	case BF16:
		return "bf16"
	case F16:
		return "fp16"
	case F32:
		return "fp32"
	case I32:
		return "int32"
	case E4M3:
		return "e4m3"
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Parse accepts the names String prints and the usual aliases
// (bfloat16, float16, half, float32, float, int, fp8, float8_e4m3fn).
func Parse(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16":
		return BF16, nil
	case "fp16", "f16", "float16", "half":
		return F16, nil
	case "fp32", "f32", "float32", "float":
		return F32, nil
	case "int32", "i32", "int":
		return I32, nil
	case "e4m3", "fp8", "float8_e4m3fn":
		return E4M3, nil
	}
	return Invalid, fmt.Errorf("dtype: unknown element type %q (want bf16, fp16, fp32, int32 or e4m3)", s)
}

// UnitRoundoff is the largest relative error of one rounding to d (round
// to nearest): 2^-8 for bf16, 2^-11 for fp16, 2^-24 for fp32, 2^-4 for
// e4m3 (normal values), 0 for int32.
func (d DType) UnitRoundoff() float64 {
	switch d {
	case E4M3:
		return 1.0 / (1 << 4)
	case BF16:
		return 1.0 / (1 << 8)
	case F16:
		return 1.0 / (1 << 11)
	case F32:
		return 1.0 / (1 << 24)
	}
	return 0
}

// Get reads element i of a little-endian buffer of type d as float64.
func (d DType) Get(b []byte, i int) float64 {
	switch d {
	case BF16:
		return float64(BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
	case F16:
		return float64(F16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case I32:
		return float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	case E4M3:
		return E4M3ToF64(b[i])
	}
	panic("dtype: Get on " + d.String())
}

// Put writes v as element i of a little-endian buffer of type d, rounding to
// nearest even (int32: v must be integral and in range; it is truncated;
// e4m3 saturates at ±448).
func (d DType) Put(b []byte, i int, v float64) {
	switch d {
	case BF16:
		binary.LittleEndian.PutUint16(b[2*i:], F32ToBF16(float32(v)))
	case F16:
		binary.LittleEndian.PutUint16(b[2*i:], F32ToF16(float32(v)))
	case F32:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	case I32:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
	case E4M3:
		b[i] = F64ToE4M3(v)
	default:
		panic("dtype: Put on " + d.String())
	}
}

// BF16ToF32 widens a bfloat16 bit pattern (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to the nearest bfloat16, ties to even; NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and non-zero
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToF32 widens an IEEE half bit pattern (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf / NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: value = mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 rounds to the nearest IEEE half, ties to even, with overflow to
// infinity and gradual underflow.
func F32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int32(u>>23) & 0xff
	mant := u & 0x7fffff
	if exp == 0xff { // inf / NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000 // implicit bit
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := m & (1<<shift - 1)
		r := m >> shift
		if rest > half || (rest == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, and to inf: both correct
	}
	return sign | uint16(r)
}

// E4M3ToF64 widens an fp8 e4m3 bit pattern (exact).
func E4M3ToF64(x byte) float64 {
	exp, mant := int(x>>3)&0xf, float64(x&7)
	var v float64
	switch {
	case exp == 0xf && mant == 7:
		v = math.NaN()
	case exp == 0: // subnormal: mant · 2^-9
		v = math.Ldexp(mant, -9)
	default:
		v = math.Ldexp(1+mant/8, exp-7)
	}
	if x&0x80 != 0 {
		v = -v
	}
	return v
}

// F64ToE4M3 rounds to the nearest e4m3, ties to even, saturating at ±448
// (as the GPU's cvt.rn.satfinite); NaN stays NaN.
func F64ToE4M3(v float64) byte {
	var sign byte
	if math.Signbit(v) {
		sign = 0x80
	}
	x := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return sign | 0x7f
	case x >= 448:
		return sign | 0x7e
	case x < math.Ldexp(1, -6): // subnormal steps of 2^-9; 8 steps is the least normal, code 8
		return sign | byte(math.RoundToEven(math.Ldexp(x, 9)))
	}
	_, e := math.Frexp(x) // x = f · 2^e, f in [0.5, 1)
	e--
	q := int(math.RoundToEven((math.Ldexp(x, -e) - 1) * 8)) // the 3 mantissa bits, exact up to the rounding
	if q == 8 {
		q, e = 0, e+1
	}
	return sign | byte(e+7)<<3 | byte(q)
}
