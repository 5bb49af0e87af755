// Package check is hiercoll's independent reference for reduce-scatter
// results: fresh random inputs, outputs poisoned before a run, the expected
// sum computed in float64 (wrapping int64 for int32) from the inputs as
// rounded to their dtype, and a comparison that is bit-exact for int32 and
// within dtype tolerance for floats. Nothing here shares code with the
// kernels it checks.
package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/seed12530e24/hiercoll/dtype"
)

// Random returns count elements of dt: floats uniform in [-1, 1) rounded to
// dt; int32 uniform over its whole range (so sums wrap).
func Random(rng *rand.Rand, dt dtype.DType, count int) []byte {
	b := make([]byte, count*dt.Size())
	for i := 0; i < count; i++ {
		if dt == dtype.I32 {
			binary.LittleEndian.PutUint32(b[4*i:], rng.Uint32())
			continue
		}
		dt.Put(b, i, rng.Float64()*2-1)
	}
	return b
}

// Poison returns count elements of dt that no correct result holds: NaN for
// floats, a fixed unlikely pattern for int32 (checked by Compare's caller
// only through mismatch).
func Poison(dt dtype.DType, count int) []byte {
	b := make([]byte, count*dt.Size())
	w := PoisonWord(dt)
	for i := 0; i+4 <= len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], w)
	}
	if len(b)%4 != 0 { // an odd count of 16-bit elements
		binary.LittleEndian.PutUint16(b[len(b)-2:], uint16(w))
	}
	return b
}

// PoisonWord is Poison's pattern as a 32-bit word (two elements of a 16-bit
// dtype), for filling device memory with Memset32.
func PoisonWord(dt dtype.DType) uint32 {
	switch dt {
	case dtype.BF16:
		return 0x7fc17fc1
	case dtype.F16:
		return 0x7e017e01
	case dtype.F32:
		return 0x7fc00001
	}
	return 0xdeadbeef
}

// Expected is the reference result of a reduce-scatter for one rank: rows
// [rank*rowsPer, (rank+1)*rowsPer) of the sum of inputs, each [M, cols].
type Expected struct {
	DType  dtype.DType
	Float  []float64 // floats: the fp64 sum
	AbsSum []float64 // floats: the sum of the terms' magnitudes
	Int    []uint32  // int32: the wrapping sum
	Terms  int       // number of summed inputs
}

// ReduceScatter computes the expected output of rank from all ranks' inputs.
func ReduceScatter(dt dtype.DType, inputs [][]byte, rank, rowsPer, cols int) Expected {
	n := rowsPer * cols
	off := rank * n
	e := Expected{DType: dt, Terms: len(inputs)}
	if dt == dtype.I32 {
		e.Int = make([]uint32, n)
		for _, in := range inputs {
			for i := range e.Int {
				e.Int[i] += binary.LittleEndian.Uint32(in[4*(off+i):])
			}
		}
		return e
	}
	e.Float = make([]float64, n)
	e.AbsSum = make([]float64, n)
	for _, in := range inputs {
		for i := range e.Float {
			x := dt.Get(in, off+i)
			e.Float[i] += x
			e.AbsSum[i] += math.Abs(x)
		}
	}
	return e
}

// Report is the outcome of a comparison.
type Report struct {
	Elements   int
	Mismatches int     // elements outside tolerance (or not bit-equal for int32), NaN included
	MaxAbsErr  float64 // floats only
	BoundUse   float64 // the largest error as a fraction of its element's bound (floats)
	First      string  // the first mismatch, described
}

// OK reports whether every element matched.
func (r Report) OK() bool { return r.Mismatches == 0 }

func (r Report) String() string {
	if r.OK() {
		if r.MaxAbsErr == 0 && r.BoundUse == 0 {
			return fmt.Sprintf("%d elements match exactly", r.Elements)
		}
		return fmt.Sprintf("%d elements match (max abs err %.3g, at most %.0f%% of the error bound)", r.Elements, r.MaxAbsErr, 100*r.BoundUse)
	}
	return fmt.Sprintf("%d of %d elements mismatch; first: %s", r.Mismatches, r.Elements, r.First)
}

// Compare checks got against the expectation. Integers must match bit for
// bit. A float is held to the forward error bound of a summation whose
// partial sums are rounded to the dtype at most rounds times (a hierarchical
// reduce-scatter rounds once per level; a ring once per hop) and accumulated
// in fp32 otherwise:
//
//	|got - sum| <= (rounds*u + terms*2^-24) * sum|x_i| + 2^-24
//
// where u is the dtype's unit roundoff. Any partial sum is at most sum|x_i|
// in magnitude, so each rounding errs by at most u times that.
func (e Expected) Compare(got []byte, rounds int) Report {
	if e.DType == dtype.I32 {
		rep := Report{Elements: len(e.Int)}
		for i, want := range e.Int {
			if g := binary.LittleEndian.Uint32(got[4*i:]); g != want {
				if rep.Mismatches == 0 {
					rep.First = fmt.Sprintf("element %d: got %d, want %d", i, int32(g), int32(want))
				}
				rep.Mismatches++
			}
		}
		return rep
	}
	const f32 = 1.0 / (1 << 24)
	scale := float64(rounds)*e.DType.UnitRoundoff() + float64(e.Terms)*f32
	rep := Report{Elements: len(e.Float)}
	for i, want := range e.Float {
		g := e.DType.Get(got, i)
		diff := math.Abs(g - want)
		tol := scale*e.AbsSum[i] + f32
		if !math.IsNaN(diff) {
			rep.MaxAbsErr = max(rep.MaxAbsErr, diff)
			rep.BoundUse = max(rep.BoundUse, diff/tol)
		}
		if math.IsNaN(g) || diff > tol {
			if rep.Mismatches == 0 {
				rep.First = fmt.Sprintf("element %d: got %g, want %g (tolerance %.3g)", i, g, want, tol)
			}
			rep.Mismatches++
		}
	}
	return rep
}
