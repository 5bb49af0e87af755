// Package sizes computes byte counts from dimensions a caller chose (rows ×
// columns × element size, a sum of regions) without wrapping around: every
// product and sum is checked against Max before anything is allocated, so
// an absurd shape is an ErrInvalidArgument instead of a negative size, a
// zero-byte buffer or a panic deep inside an allocator.
package sizes

import (
	"fmt"
	"math/bits"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Max is the largest byte count hiercoll accepts for one buffer: 2^50 bytes
// (1 PiB), far beyond any device's memory, and small enough that sums of a
// few thousand such sizes, alignments and offsets stay inside int64.
const Max int64 = 1 << 50

// Product returns the product of factors and whether it is at most Max.
// A negative factor, or a product above Max, gives (0, false); no factor
// (an empty product) gives 1.
func Product(factors ...int64) (int64, bool) {
	p := uint64(1)
	for _, f := range factors {
		if f < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > uint64(Max) {
			return 0, false
		}
		p = lo
	}
	return int64(p), true
}

// Bytes is Product as an error: what names the quantity in the message
// ("rs2d: MaxM × N × element size").
func Bytes(what string, factors ...int64) (int64, error) {
	p, ok := Product(factors...)
	if !ok {
		return 0, fmt.Errorf("%s: %s: %w", what, describe(factors), hcerr.ErrInvalidArgument)
	}
	return p, nil
}

// Sum returns a + b and whether both are in [0, Max] and so is the sum.
func Sum(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > Max || b > Max || a+b > Max {
		return 0, false
	}
	return a + b, true
}

func describe(factors []int64) string {
	s := ""
	for i, f := range factors {
		if i > 0 {
			s += " × "
		}
		s += fmt.Sprint(f)
	}
	for _, f := range factors {
		if f < 0 {
			return s + " has a negative factor"
		}
	}
	return s + " bytes exceeds 2^50 (1 PiB), more than any device holds"
}
