package device

import (
	"fmt"
	"math"
)

// CheckRange reports whether the n bytes at p lie in one allocation of dev
// (own memory or a peer view), as AddressRange reports it: an address that
// is not device memory, or an extent that runs past the end of its
// allocation, is ErrInvalidArgument. Callers check every operand so before
// they enqueue anything that reads or writes it.
func CheckRange(dev Device, p Ptr, n int64) error {
	if n < 0 {
		return fmt.Errorf("%d bytes at %v: %w", n, p, ErrInvalidArgument)
	}
	base, size, err := dev.AddressRange(p)
	if err != nil {
		return fmt.Errorf("%v is not device memory: %w", p, err)
	}
	if avail := int64(base) + size - int64(p); avail < n {
		return fmt.Errorf("%d bytes at %v: its allocation has %d left: %w", n, p, avail, ErrInvalidArgument)
	}
	return nil
}

// Overlap reports whether the byte ranges [p, p+n) and [q, q+m) meet. An
// end past the address space (a size that saturated) reaches its end.
func Overlap(p Ptr, n int64, q Ptr, m int64) bool {
	end := func(a Ptr, k int64) uint64 {
		if e := uint64(a) + uint64(max(k, 0)); e >= uint64(a) {
			return e
		}
		return math.MaxUint64
	}
	return uint64(p) < end(q, m) && uint64(q) < end(p, n)
}
